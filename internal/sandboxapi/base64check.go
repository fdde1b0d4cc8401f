package sandboxapi

import (
	"encoding/base64"
	"errors"
	"io"
)

// base64Check is the result of checking spooled base64 text: the decoded
// length and first two bytes.
type base64Check struct {
	n    int64
	head [2]byte
}

// std64 maps a byte of the standard alphabet to its value, 0xff otherwise.
var std64 = func() (m [256]byte) {
	for i := range m {
		m[i] = 0xff
	}
	for i, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		m[c] = byte(i)
	}
	return m
}()

// checkBase64 reads base64 text from r as base64.StdEncoding.DecodeString
// would decode it whole, without holding it: the same input is accepted or
// refused with the same CorruptInputError, and the decoded length and first
// bytes are counted. (A text it accepts decodes the same through
// base64.NewDecoder, which the run then reads.)
func checkBase64(r io.Reader) (base64Check, error) {
	var out base64Check
	const (
		data      = iota // in the quanta
		secondPad        // after "xx=": only newlines, then "="
		afterPad         // after the padding: only newlines
	)
	var (
		buf   [32 << 10]byte
		q     [4]byte
		j     int   // characters of the quantum so far
		si    int64 // offset of the next byte
		phase = data
	)
	// quantum counts the dlen-1 bytes of a quantum of dlen characters;
	// only the first two bytes of the whole are kept.
	quantum := func(dlen int) {
		if out.n < 2 {
			v := uint(q[0])<<18 | uint(q[1])<<12 | uint(q[2])<<6 | uint(q[3])
			b := [3]byte{byte(v >> 16), byte(v >> 8), byte(v)}
			for i := 0; i < dlen-1 && out.n+int64(i) < 2; i++ {
				out.head[out.n+int64(i)] = b[i]
			}
		}
		out.n += int64(dlen - 1)
	}
	for {
		n, rerr := r.Read(buf[:])
		for _, c := range buf[:n] {
			at := si
			si++
			switch phase {
			case data:
				if v := std64[c]; v != 0xff {
					q[j] = v
					if j++; j == 4 {
						quantum(4)
						j = 0
						q = [4]byte{}
					}
					continue
				}
				switch {
				case c == '\n' || c == '\r':
				case c != '=', j < 2:
					return out, base64.CorruptInputError(at)
				case j == 2:
					phase = secondPad
				default: // j == 3
					quantum(3)
					phase = afterPad
				}
			case secondPad:
				switch {
				case c == '\n' || c == '\r':
				case c != '=':
					return out, base64.CorruptInputError(at - 1)
				default:
					quantum(2)
					phase = afterPad
				}
			case afterPad:
				if c != '\n' && c != '\r' {
					return out, base64.CorruptInputError(at)
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return out, rerr
		}
	}
	switch {
	case phase == secondPad:
		return out, base64.CorruptInputError(si)
	case phase == data && j > 0:
		return out, base64.CorruptInputError(si - int64(j))
	}
	return out, nil
}
