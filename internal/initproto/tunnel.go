package initproto

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/asterhq/aster/internal/textclip"
)

// Tunnel frames carry the TCP tunnels of a run with egress: aster-init accepts
// a CONNECT inside the sandbox and asks the host to open the tunnel (open);
// the host answers (answer); then data flows both ways under per-tunnel credit
// (grant), and either side ends its direction or the whole tunnel (close).
// Every payload starts with the tunnel id, a big-endian uint32 init chose.
//
// Flow control: each side may have at most TunnelWindow bytes of one tunnel
// sent and not yet granted back by the other; the receiver grants what it has
// written to its own end. So one slow tunnel only ever holds TunnelWindow
// bytes on the receiving side and never stalls the shared stream that carries
// output, the result and the other tunnels.
const (
	TypeTunnelOpen   Type = 'C' // init → host: id, port (uint16), host name
	TypeTunnelAnswer Type = 'A' // host → init: id, ok byte, refusal reason
	TypeTunnelData   Type = 'D' // both ways: id, bytes
	TypeTunnelGrant  Type = 'G' // both ways: id, byte count (uint32)
	TypeTunnelClose  Type = 'K' // both ways: id, how (CloseWrite or CloseAbort)
)

// Export frames carry /work out of the sandbox after the command exited.
const (
	TypeExport    Type = 'P' // init → host: a chunk of the export tar stream
	TypeExportEnd Type = 'p' // init → host: JSON ExportEnd; the stream is over
)

// Bounds of the tunnel frames.
const (
	// MaxTunnels is how many tunnels may be open (or opening) at once.
	MaxTunnels = 32
	// TunnelWindow is the credit each side starts a tunnel with, and the most
	// it may ever have outstanding.
	TunnelWindow = 256 << 10
	// MaxTunnelChunk is the largest data payload of one tunnel frame.
	MaxTunnelChunk = 32 << 10
	// MaxHostName is the longest host name a tunnel may ask for (DNS's limit).
	MaxHostName = 253
	// MaxTunnelReason is the longest refusal reason carried to init.
	MaxTunnelReason = 512
)

// How a tunnel close frame ends a tunnel.
const (
	// CloseWrite: the sender writes no more (its end read EOF); the other
	// direction stays open.
	CloseWrite byte = 0
	// CloseAbort: the tunnel is gone both ways.
	CloseAbort byte = 1
)

// TunnelOpen asks the host for a tunnel to Host:Port.
type TunnelOpen struct {
	ID   uint32
	Port uint16
	Host string
}

// EncodeTunnelOpen is the payload of a TypeTunnelOpen frame.
func EncodeTunnelOpen(o TunnelOpen) []byte {
	p := make([]byte, 6, 6+len(o.Host))
	binary.BigEndian.PutUint32(p, o.ID)
	binary.BigEndian.PutUint16(p[4:], o.Port)
	return append(p, o.Host...)
}

// DecodeTunnelOpen parses and checks a TypeTunnelOpen payload. The host name
// is only checked for shape (length, printable ASCII); what it may reach is
// the relay's decision.
func DecodeTunnelOpen(p []byte) (TunnelOpen, error) {
	if len(p) < 7 {
		return TunnelOpen{}, fmt.Errorf("tunnel open frame of %d bytes is too short", len(p))
	}
	o := TunnelOpen{ID: binary.BigEndian.Uint32(p), Port: binary.BigEndian.Uint16(p[4:]), Host: string(p[6:])}
	if o.ID == 0 {
		return TunnelOpen{}, fmt.Errorf("tunnel open frame: id 0")
	}
	if o.Port == 0 {
		return TunnelOpen{}, fmt.Errorf("tunnel open frame: port 0")
	}
	if len(o.Host) > MaxHostName+2 { // a bracketed IPv6 literal is refused later, with a reason
		return TunnelOpen{}, fmt.Errorf("tunnel open frame: host name of %d bytes exceeds %d", len(o.Host), MaxHostName)
	}
	for i := 0; i < len(o.Host); i++ {
		if c := o.Host[i]; c <= ' ' || c >= 0x7f {
			return TunnelOpen{}, fmt.Errorf("tunnel open frame: host name has byte %#x", c)
		}
	}
	return o, nil
}

// TunnelAnswer is the host's answer to an open: the tunnel is open, or why not.
type TunnelAnswer struct {
	ID     uint32
	Status byte // AnswerOpen, AnswerRefused, AnswerFailed
	Reason string
}

// Answers to a tunnel open.
const (
	// AnswerRefused: the destination is not allowed (the proxy says 403).
	AnswerRefused byte = 0
	// AnswerOpen: the tunnel is open (200).
	AnswerOpen byte = 1
	// AnswerFailed: allowed, but it could not be reached (502).
	AnswerFailed byte = 2
)

// EncodeTunnelAnswer is the payload of a TypeTunnelAnswer frame. A long
// reason is cut to MaxTunnelReason bytes.
func EncodeTunnelAnswer(a TunnelAnswer) []byte {
	p := make([]byte, 5, 5+len(a.Reason))
	binary.BigEndian.PutUint32(p, a.ID)
	p[4] = a.Status
	return append(p, textclip.Head(a.Reason, MaxTunnelReason, "")...)
}

// DecodeTunnelAnswer parses a TypeTunnelAnswer payload; the reason is made
// printable (it is shown to the job, then perhaps to a person).
func DecodeTunnelAnswer(p []byte) (TunnelAnswer, error) {
	if len(p) < 5 {
		return TunnelAnswer{}, fmt.Errorf("tunnel answer frame of %d bytes is too short", len(p))
	}
	if p[4] > AnswerFailed {
		return TunnelAnswer{}, fmt.Errorf("tunnel answer frame: status %d", p[4])
	}
	if len(p)-5 > MaxTunnelReason {
		return TunnelAnswer{}, fmt.Errorf("tunnel answer frame: reason of %d bytes exceeds %d", len(p)-5, MaxTunnelReason)
	}
	a := TunnelAnswer{ID: binary.BigEndian.Uint32(p), Status: p[4], Reason: printable(string(p[5:]))}
	if a.ID == 0 {
		return TunnelAnswer{}, fmt.Errorf("tunnel answer frame: id 0")
	}
	return a, nil
}

// EncodeTunnelData is the payload of a TypeTunnelData frame (data of at most
// MaxTunnelChunk bytes).
func EncodeTunnelData(id uint32, data []byte) []byte {
	p := make([]byte, 4, 4+len(data))
	binary.BigEndian.PutUint32(p, id)
	return append(p, data...)
}

// DecodeTunnelData parses a TypeTunnelData payload. The data aliases p.
func DecodeTunnelData(p []byte) (uint32, []byte, error) {
	if len(p) < 5 {
		return 0, nil, fmt.Errorf("tunnel data frame of %d bytes is too short", len(p))
	}
	if len(p)-4 > MaxTunnelChunk {
		return 0, nil, fmt.Errorf("tunnel data frame of %d bytes exceeds %d", len(p)-4, MaxTunnelChunk)
	}
	id := binary.BigEndian.Uint32(p)
	if id == 0 {
		return 0, nil, fmt.Errorf("tunnel data frame: id 0")
	}
	return id, p[4:], nil
}

// EncodeTunnelGrant is the payload of a TypeTunnelGrant frame.
func EncodeTunnelGrant(id, n uint32) []byte {
	p := make([]byte, 8)
	binary.BigEndian.PutUint32(p, id)
	binary.BigEndian.PutUint32(p[4:], n)
	return p
}

// DecodeTunnelGrant parses a TypeTunnelGrant payload.
func DecodeTunnelGrant(p []byte) (id, n uint32, err error) {
	if len(p) != 8 {
		return 0, 0, fmt.Errorf("tunnel grant frame of %d bytes, want 8", len(p))
	}
	id, n = binary.BigEndian.Uint32(p), binary.BigEndian.Uint32(p[4:])
	if id == 0 || n == 0 || n > TunnelWindow {
		return 0, 0, fmt.Errorf("tunnel grant frame: id %d, %d bytes", id, n)
	}
	return id, n, nil
}

// EncodeTunnelClose is the payload of a TypeTunnelClose frame.
func EncodeTunnelClose(id uint32, how byte) []byte {
	p := make([]byte, 5)
	binary.BigEndian.PutUint32(p, id)
	p[4] = how
	return p
}

// DecodeTunnelClose parses a TypeTunnelClose payload.
func DecodeTunnelClose(p []byte) (uint32, byte, error) {
	if len(p) != 5 {
		return 0, 0, fmt.Errorf("tunnel close frame of %d bytes, want 5", len(p))
	}
	id := binary.BigEndian.Uint32(p)
	if id == 0 || p[4] > CloseAbort {
		return 0, 0, fmt.Errorf("tunnel close frame: id %d, how %d", id, p[4])
	}
	return id, p[4], nil
}

// TunnelID reads the id at the start of any tunnel frame's payload (0 when
// the payload is too short).
func TunnelID(p []byte) uint32 {
	if len(p) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

// printable replaces control characters and invalid UTF-8 with '?'.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
