package gate

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandboxapi"
)

// ValidateRequest is the JSON spec of POST /v1/validate, sent in the
// X-Aster-Spec header of an application/x-tar body or as the "spec" field of
// a multipart/form-data body (whose "workspace" file is the tar).
type ValidateRequest struct {
	// Analyzers names the analyzers to run (default: all the server has).
	Analyzers []string `json:"analyzers,omitempty"`
	// ChangedFiles, when given, limits file-list analyzers to these paths
	// and marks findings by whether they lie in one (reported).
	ChangedFiles []string `json:"changed_files,omitempty"`
}

// ValidateResponse is the answer of POST /v1/validate.
type ValidateResponse struct {
	Findings   []Marked         `json:"findings"`
	Summary    Summary          `json:"summary"`
	Analyzers  []AnalyzerResult `json:"analyzers"`
	DurationMS int64            `json:"duration_ms"`
}

// HandlerOptions configure the /v1/validate handler.
type HandlerOptions struct {
	Runner *Runner
	// Analyzers are the ones a request may name (default Builtins()).
	Analyzers []Analyzer
	// Body caps and spools the request (see sandboxapi.ReadBody).
	Body sandboxapi.BodyOptions
}

// Caps on a validate request's lists.
const (
	maxChangedFiles = 100_000
	maxSnapshotList = 200_000
)

// NewHandler returns the http.Handler of POST /v1/validate: a repository
// snapshot (tar) plus an optional analyzer list and changed-file list in, the
// findings, a summary, and each analyzer's status and duration out. Errors are
// JSON {"error":{"code","message"}} with the status of their class (400, 413,
// 415, 429, 503). Sandboxapi's server applies auth and the body cap first.
func NewHandler(opts HandlerOptions) http.Handler {
	if opts.Analyzers == nil {
		opts.Analyzers = Builtins()
	}
	return &handler{opts: opts}
}

type handler struct{ opts HandlerOptions }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		sandboxapi.WriteError(w, fmt.Errorf("%w: /v1/validate takes POST", api.ErrMethodNotAllowed), 0)
		return
	}
	var req ValidateRequest
	snap, err := sandboxapi.ReadBody(w, r, &req, h.opts.Body)
	if err != nil {
		sandboxapi.WriteError(w, err, 1)
		return
	}
	defer snap.Close()
	if snap == nil {
		sandboxapi.WriteError(w, sandbox.Invalidf("a repository snapshot is required: send application/x-tar (spec in the %s header) or multipart/form-data with a workspace file", api.HeaderSpec), 0)
		return
	}
	analyzers, err := h.pick(req.Analyzers)
	if err != nil {
		sandboxapi.WriteError(w, err, 0)
		return
	}
	if len(req.ChangedFiles) > maxChangedFiles {
		sandboxapi.WriteError(w, sandbox.Invalidf("changed_files has %d entries, more than %d", len(req.ChangedFiles), maxChangedFiles), 0)
		return
	}
	names, err := snap.Names(maxSnapshotList)
	if err != nil {
		sandboxapi.WriteError(w, sandbox.Invalidf("snapshot: %v", err), 0)
		return
	}
	var files []string
	for _, n := range names {
		if !strings.HasSuffix(n, "/") {
			files = append(files, n)
		}
	}
	gs := NewSnapshotFrom(func() (io.ReadCloser, error) { return io.NopCloser(snap.Reader()), nil }, files, snap.Stats)
	t0 := time.Now()
	greq := Request{Snapshot: gs, Analyzers: analyzers}
	mode := ModeNoFilter
	var changed []*diff.File
	if req.ChangedFiles != nil {
		greq.Changed = req.ChangedFiles
		mode = ModeFile
		for _, p := range req.ChangedFiles {
			changed = append(changed, &diff.File{NewPath: p, OldPath: p, Status: diff.StatusModified})
		}
	}
	res := h.opts.Runner.Run(r.Context(), greq)
	marked := NewFilter(changed, mode).MarkAll(res.Findings)
	out := ValidateResponse{Findings: marked, Summary: Summarize(marked), Analyzers: res.Analyzers, DurationMS: time.Since(t0).Milliseconds()}
	w.Header().Set("Content-Type", api.ContentTypeJSON)
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
}

func (h *handler) pick(names []string) ([]Analyzer, error) {
	if len(names) == 0 {
		return h.opts.Analyzers, nil
	}
	if len(names) > len(h.opts.Analyzers) {
		return nil, sandbox.Invalidf("%d analyzers named; this server has %d", len(names), len(h.opts.Analyzers))
	}
	var out []Analyzer
	for _, n := range names {
		a, ok := Lookup(h.opts.Analyzers, n)
		if !ok {
			return nil, sandbox.Invalidf("unknown analyzer %q (have %s)", clip(n, 64), strings.Join(Names(h.opts.Analyzers), ", "))
		}
		if !slices.ContainsFunc(out, func(x Analyzer) bool { return x.Name == n }) {
			out = append(out, a)
		}
	}
	return out, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
