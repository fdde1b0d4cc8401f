package initproto

import "fmt"

// TypeResize (host → init) changes the size of a job's terminal: a 4-byte
// payload, columns then rows, each a big-endian uint16. It is valid only in
// a job whose header asked for a terminal (JobHeader.PTY); init ignores it
// otherwise.
const TypeResize Type = 'S'

// MaxTermSize bounds a terminal's columns and rows. A terminal is a grid the
// programs inside allocate for; nobody types into more than this.
const MaxTermSize = 1000

// TermSize is a terminal's size in character cells.
type TermSize struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// Validate checks a size before init hands it to the kernel.
func (s TermSize) Validate() error {
	if s.Cols == 0 || s.Rows == 0 || s.Cols > MaxTermSize || s.Rows > MaxTermSize {
		return fmt.Errorf("terminal size %dx%d: columns and rows go from 1 to %d", s.Cols, s.Rows, MaxTermSize)
	}
	return nil
}

// EncodeResize is the payload of a TypeResize frame.
func EncodeResize(s TermSize) []byte {
	return []byte{byte(s.Cols >> 8), byte(s.Cols), byte(s.Rows >> 8), byte(s.Rows)}
}

// DecodeResize parses and range-checks a TypeResize payload.
func DecodeResize(p []byte) (TermSize, error) {
	if len(p) != 4 {
		return TermSize{}, fmt.Errorf("resize frame of %d bytes, want 4", len(p))
	}
	s := TermSize{Cols: uint16(p[0])<<8 | uint16(p[1]), Rows: uint16(p[2])<<8 | uint16(p[3])}
	if err := s.Validate(); err != nil {
		return TermSize{}, fmt.Errorf("resize frame: %w", err)
	}
	return s, nil
}
