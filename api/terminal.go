package api

// Terminals of sessions (docs/sessions.md#terminals).
const (
	// RouteSessionPTY opens an interactive terminal over WebSocket: the
	// client's text and binary messages are typed into it as they are, the
	// server's binary messages are its output as it is (what xterm.js's
	// attach addon speaks). The query gives its size (cols, rows) and may
	// name it (terminal).
	RouteSessionPTY = "/v1/sessions/{id}/pty"
	// RouteSessionPTYResize changes the size of an open terminal.
	RouteSessionPTYResize = "/v1/sessions/{id}/pty/resize"
	// HeaderTerminal names the terminal in the WebSocket handshake's answer.
	HeaderTerminal = "X-Aster-Terminal"
)

// TerminalResize is the body of POST /v1/sessions/{id}/pty/resize.
type TerminalResize struct {
	// Terminal names the terminal (the X-Aster-Terminal of its handshake, or
	// the name given with ?terminal=); it may be left out when the session
	// has one terminal open.
	Terminal string `json:"terminal,omitempty"`
	Cols     int    `json:"cols"`
	Rows     int    `json:"rows"`
}
