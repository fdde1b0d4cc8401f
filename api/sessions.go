package api

import "time"

// Routes of sessions (docs/sessions.md). The {id} and {path} segments are
// templates: RouteSession and the others are what the OpenAPI description
// names; a request names a session's id and a file's path there. {path} is
// the rest of the URL path, slashes included, relative to /work.
const (
	RouteSessions     = "/v1/sessions"
	RouteSession      = "/v1/sessions/{id}"
	RouteSessionExec  = "/v1/sessions/{id}/exec"
	RouteSessionFiles = "/v1/sessions/{id}/files/{path}"
	// RouteSessionRoot lists /work itself.
	RouteSessionRoot = "/v1/sessions/{id}/files"
	// RouteSessionPause freezes a session and RouteSessionResume thaws it.
	RouteSessionPause  = "/v1/sessions/{id}/pause"
	RouteSessionResume = "/v1/sessions/{id}/resume"
	// RouteSessionSnapshot stores the session's /work as a snapshot, or with
	// SnapshotRequest.Memory its whole sandbox (gVisor).
	RouteSessionSnapshot = "/v1/sessions/{id}/snapshot"
	// RouteSessionEgress sets the session's egress profile (PUT).
	RouteSessionEgress = "/v1/sessions/{id}/egress"
	// RouteSnapshots lists the caller's snapshots; RouteSnapshot deletes one.
	RouteSnapshots = "/v1/snapshots"
	RouteSnapshot  = "/v1/snapshots/{id}"
)

// SessionSnapshot is a stored copy of a session's /work that new sessions start
// from (POST /v1/sessions with from_snapshot).
type SessionSnapshot struct {
	ID        string `json:"id"`
	Session   string `json:"session"` // the session it was taken of
	SizeBytes int64  `json:"size_bytes"`
	// Memory: a checkpoint of the whole sandbox (processes, memory, /work
	// and /tmp) rather than an archive of /work.
	Memory     bool      `json:"memory,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
}

// SnapshotRequest is the optional body of POST /v1/sessions/{id}/snapshot.
type SnapshotRequest struct {
	// Memory asks for a checkpoint of the whole running sandbox — every
	// process with its memory, /work and /tmp — that forks are restored
	// from (the gvisor runtime only; elsewhere 400).
	Memory bool `json:"memory,omitempty"`
}

// SessionSnapshotList is the answer of GET /v1/snapshots: the caller's snapshots.
type SessionSnapshotList struct {
	Snapshots []SessionSnapshot `json:"snapshots"`
}

// ContentTypeOctets is the media type of a file's bytes in the file API.
const ContentTypeOctets = "application/octet-stream"

// SessionRequest is the body of POST /v1/sessions.
type SessionRequest struct {
	// Image must be on the server's allowlist; empty is the default image.
	Image string `json:"image,omitempty"`
	// Env is added to every exec's environment.
	Env map[string]string `json:"env,omitempty"`
	// Files are placed at /work before the session is returned.
	Files map[string]File `json:"files,omitempty"`
	// Limits left out take the server's defaults; they hold for the whole
	// session, timeout and output ones for each exec unless it sets its own.
	Limits Limits `json:"limits,omitzero"`
	// TTL is the session's whole life and IdleTimeout ends it after that
	// long without a call ("30m", or seconds); left out, the server's
	// defaults; above its ceilings, 400.
	TTL         Quantity `json:"ttl,omitempty"`
	IdleTimeout Quantity `json:"idle_timeout,omitempty"`
	// FromSnapshot starts the session with the /work of a snapshot this
	// token took (files are placed after it); a memory snapshot restores
	// the whole sandbox, with its image and limits (give neither).
	FromSnapshot string `json:"from_snapshot,omitempty"`
	// EgressProfile names one of the operator's egress profiles (aster.yaml
	// egress.profiles) that this token may use: the hosts the session's
	// commands may reach through the relay. Empty: none until one is set.
	EgressProfile string `json:"egress_profile,omitempty"`
}

// SessionEgressRequest is the body of PUT /v1/sessions/{id}/egress.
type SessionEgressRequest struct {
	// Profile is an egress profile the token may use; "" is none. The
	// tunnels of the previous profile are closed.
	Profile string `json:"profile"`
}

// Session describes a live session.
type Session struct {
	ID            string    `json:"id"`
	Image         string    `json:"image"`
	ImageDigest   string    `json:"image_digest"`
	Runtime       string    `json:"runtime"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	LastUsedAt    time.Time `json:"last_used_at"`
	IdleTimeoutMS int64     `json:"idle_timeout_ms"`
	Running       int       `json:"running"`
	Paused        bool      `json:"paused"`
	// EgressProfile is the egress profile in force ("" for none).
	EgressProfile string `json:"egress_profile,omitempty"`
}

// SessionList is the answer of GET /v1/sessions: the caller's sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// SessionExecRequest is the body of POST /v1/sessions/{id}/exec.
type SessionExecRequest struct {
	Argv          []string          `json:"argv"`
	Env           map[string]string `json:"env,omitempty"`
	Workdir       string            `json:"workdir,omitempty"`
	Stdin         string            `json:"stdin,omitempty"`
	StdinEncoding string            `json:"stdin_encoding,omitempty"`
	// Timeout, OutputLimit and OutputCeiling replace the session's for this
	// exec; the server's ceilings apply.
	Timeout       Quantity `json:"timeout,omitempty"`
	OutputLimit   Quantity `json:"output_limit,omitempty"`
	OutputCeiling Quantity `json:"output_ceiling,omitempty"`
}

// FileEntry is one entry of a directory listing.
type FileEntry struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"` // "file", "dir", "symlink" or "other"
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// FileList is the answer of GET on a directory of a session.
type FileList struct {
	Path    string      `json:"path"`
	Entries []FileEntry `json:"entries"`
}
