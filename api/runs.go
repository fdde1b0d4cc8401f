package api

import (
	"encoding/json"
	"time"
)

// The kinds of an asynchronous run: the synchronous route whose body it
// takes and whose answer becomes its result.
const (
	RunKindExecute = "execute"
	RunKindTest    = "test"
)

// The states of an asynchronous run.
const (
	// RunQueued: accepted, not started yet.
	RunQueued = "queued"
	// RunRunning: its sandbox is being prepared or runs.
	RunRunning = "running"
	// RunDone: it ended with a result (whatever the job's own status).
	RunDone = "done"
	// RunError: it ended without a result (Error says why), e.g. the
	// server stopped while it was running.
	RunError = "error"
)

// Run is an asynchronous run as GET /v1/runs/{id} answers it, and as POST
// /v1/runs answers (202, without Result) when it is accepted.
type Run struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	State string `json:"state"`
	// Result is what the synchronous route would have answered (a Result
	// for execute, a TestResponse for test), once State is done.
	Result json.RawMessage `json:"result,omitempty"`
	// Error says why a run in state error has no result.
	Error       *ErrorDetail `json:"error,omitempty"`
	CallbackURL string       `json:"callback_url,omitempty"`
	CreatedAt   time.Time    `json:"created_at"`
	StartedAt   *time.Time   `json:"started_at,omitempty"`
	FinishedAt  *time.Time   `json:"finished_at,omitempty"`
}

// RunList is GET /v1/runs: the caller's most recent runs, newest first,
// without their results.
type RunList struct {
	Runs []Run `json:"runs"`
}

// Image is one image a request may name.
type Image struct {
	Name    string `json:"name"`
	Default bool   `json:"default"`
	// Digest is the image's content digest on this server's engine ("" when
	// the engine does not have it).
	Digest string `json:"digest,omitempty"`
	// Toolchains are the versions of the languages' tools found in the
	// image (python, node, npm, go, java, ruby, gcc, ...), as they print them.
	Toolchains map[string]string `json:"toolchains"`
	// Error says why the image could not be inspected.
	Error string `json:"error,omitempty"`
}

// ImageList is GET /v1/images.
type ImageList struct {
	Images []Image `json:"images"`
}
