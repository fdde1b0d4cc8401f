package sandboxapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/testrun"
)

// readRequest admits a request's body (admitBody) and reads it into req
// (ReadBody). done, never nil, closes the snapshot and releases the
// admission: the caller defers it, and answers an error before it runs.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, req any) (snap *Snapshot, done func(), err error) {
	adm, err := s.admitBody(w, r)
	if err != nil {
		return nil, func() {}, err
	}
	snap, err = ReadBody(w, r, req, s.BodyOptions())
	adm.bodyRead()
	return snap, func() { snap.Close(); adm.release() }, err
}

// readJob is readRequest for a request that carries a job (job points into
// req), followed by the job's spec (jobSpec). done is readRequest's.
func (s *Server) readJob(w http.ResponseWriter, r *http.Request, req any, job *api.JobRequest) (snap *Snapshot, spec sandbox.Spec, done func(), err error) {
	snap, done, err = s.readRequest(w, r, req)
	if err != nil {
		return snap, spec, done, err
	}
	spec, err = s.jobSpec(*job, snap)
	return snap, spec, done, err
}

func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	var req api.ExecuteRequest
	_, spec, done, err := s.readJob(w, r, &req, &req.JobRequest)
	stateOf(r).onDone(done) // by ServeHTTP, or by the run when it is detached
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	spec.Argv = req.Argv
	s.run(w, r, spec, nil, func(res sandbox.Result) any { return res.Wire() })
}

func (s *Server) test(w http.ResponseWriter, r *http.Request) {
	var req api.TestRequest
	var body api.TestResponse
	snap, spec, done, err := s.readJob(w, r, &req, &req.JobRequest)
	stateOf(r).onDone(done)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	plan, install, err := testPlan(req, snap)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err := s.testJob(req, spec, snap, plan, install)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// One share of the spool space for everything the request puts on
	// disk, from its snapshot to its dependency archive, held until it is
	// answered (and so also while its test phase waits for a slot).
	if snap != nil {
		job.Disk = snap.space
	} else {
		disk, _ := s.spool.Reserve(0)
		stateOf(r).onDone(disk.Release)
		job.Disk = disk
	}
	// Refuse a spec the Manager would refuse before anything runs: the
	// install phase must not start for a test phase that cannot.
	// Its files were packed and checked into the job's archive already.
	probe := spec
	probe.Argv, probe.Env = plan.Argv, plan.MergeEnv(req.Env)
	probe.Workspace = sandbox.Workspace{}
	if _, err := s.mgr.Normalize(probe); err != nil {
		s.writeError(w, r, err)
		return
	}
	received := stateOf(r).received
	s.answer(w, r, job.ID, func(ctx context.Context, st *streamer) (sandbox.Result, error) {
		out, err := s.tests.Run(ctx, job, func(ctx context.Context, phase string, spec sandbox.Spec) (sandbox.Result, error) {
			prev := spec.OnOutput
			spec.OnOutput = func(stream sandbox.Stream, data []byte) {
				if prev != nil {
					prev(stream, data)
				}
				if st != nil {
					if phase == testphase.PhaseInstall {
						stream = sandbox.Stderr // stdout is the test report's
					}
					st.output(stream, data)
				}
			}
			// Admission is the first phase's only: a later one's wait is the phases before it.
			opts := sandbox.RunOptions{Received: received}
			received = time.Time{}
			if st != nil {
				opts.Admitted = st.start
			}
			return s.mgr.RunWithOptions(ctx, spec, opts)
		})
		if err != nil {
			return out.Result, err
		}
		body = out.Response()
		return out.Result, out.Err
	}, func(sandbox.Result) any { return body })
}

// Validator is what /v1/validate needs from the gate.
type Validator interface {
	Validate(ctx context.Context, in gate.ValidateInput) (gate.ValidateResponse, error)
}

var _ Validator = (*gate.Validator)(nil)

// maxSnapshotList bounds the entries of a snapshot listed for /v1/validate.
const maxSnapshotList = 200_000

// validate serves /v1/validate through the same admission and body reading
// as the runs: its snapshot is bounded by the workspace ceiling and holds
// that much of the spool space while the analyzers run.
func (s *Server) validate(w http.ResponseWriter, r *http.Request) {
	// One id for the whole validation (its analyzers run as sandboxes of their own), in the
	// answer's header and the request's log line, as for /v1/execute and /v1/test.
	w.Header().Set(api.HeaderRunID, sandbox.NewRunID())
	var req api.ValidateRequest
	snap, done, err := s.readRequest(w, r, &req)
	defer done()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if snap == nil {
		s.writeError(w, r, sandbox.Invalidf("a repository snapshot is required: send application/x-tar (spec in the %s header) or multipart/form-data with a workspace file", api.HeaderSpec))
		return
	}
	names, err := snap.Names(maxSnapshotList)
	if err != nil {
		s.writeError(w, r, sandbox.Invalidf("snapshot: %v", err))
		return
	}
	var files []string
	for _, n := range names {
		if !strings.HasSuffix(n, "/") {
			files = append(files, n)
		}
	}
	gs := gate.NewSnapshotFrom(func() (io.ReadCloser, error) { return io.NopCloser(snap.Reader()), nil }, files, snap.Stats)
	out, err := s.opts.Validator.Validate(r.Context(), gate.ValidateInput{Snapshot: gs, Analyzers: req.Analyzers, ChangedFiles: req.ChangedFiles})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

// run normalises spec, runs it through the Manager and answers: a JSON body,
// or an NDJSON stream when the client asked for one. report, when set, is fed
// the job's stdout as it arrives.
func (s *Server) run(w http.ResponseWriter, r *http.Request, spec sandbox.Spec, report *testrun.Collector, body func(sandbox.Result) any) {
	spec, err := s.mgr.Normalize(spec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, r, spec.ID, func(ctx context.Context, st *streamer) (sandbox.Result, error) {
		spec.OnOutput = func(stream sandbox.Stream, data []byte) {
			if report != nil && stream == sandbox.Stdout {
				_, _ = report.Write(data)
			}
			if st != nil {
				st.output(stream, data)
			}
		}
		opts := sandbox.RunOptions{Normalized: true, Received: stateOf(r).received}
		if st != nil {
			opts.Admitted = st.start
		}
		return s.mgr.RunWithOptions(ctx, spec, opts)
	}, body)
}

// answer runs exec (one run, or the phases of a test) and answers: a JSON
// body, or an NDJSON stream when the client asked for one; id is the run's
// id, sent in the header.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, id string, exec func(ctx context.Context, st *streamer) (sandbox.Result, error), body func(sandbox.Result) any) {
	if q := stateOf(r); q.async != nil {
		s.detach(w, r, q, id, exec, body)
		return
	}
	w.Header().Set(api.HeaderRunID, id)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	var st *streamer
	if wantsStream(r) {
		st = newStreamer(w, s.opts.WriteTimeout, cancel)
	}
	res, err := exec(ctx, st)
	if res.Runtime != "" {
		// The result phase: from the run's result to the answer written.
		defer func(t0 time.Time) { s.metrics.observePhase(res.Runtime, "result", time.Since(t0)) }(time.Now())
	}
	err = s.reclassify(err)
	status, code := StatusFor(err)
	classified := err != nil && status != http.StatusInternalServerError
	if err != nil && !classified {
		s.log.Warn("run failed", "run", id, "err", err)
	}
	if st != nil && st.isStarted() {
		var events []any
		if classified {
			events = append(events, api.ErrorEvent{Type: api.EventError, Error: api.ErrorDetail{Code: code, Message: err.Error()}})
		}
		st.finish(append(events, resultEvent(body(res)))...)
		return
	}
	if classified {
		s.writeError(w, r, err)
		return
	}
	// A run that started and failed inside the sandbox is still a result:
	// status "error" with the output it produced.
	s.writeJSON(w, http.StatusOK, body(res))
}

func isSnapshotUpload(r *http.Request) bool {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	return strings.HasPrefix(ct, api.ContentTypeTar) || strings.HasPrefix(ct, "multipart/form-data")
}

// reclassify names a run failure the engine caused: when a run broke and the
// engine is unreachable now, the client should retry (503), not blame the job.
func (s *Server) reclassify(err error) error {
	if err == nil {
		return nil
	}
	if status, _ := StatusFor(err); status != http.StatusInternalServerError || errors.Is(err, context.Canceled) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if cerr := s.mgr.Runtime().Check(ctx); cerr != nil {
		s.metrics.setEngineUp(false)
		return fmt.Errorf("%w (the run failed: %v)", cerr, err)
	}
	return err
}

// ready answers /readyz: the engine is reachable and the default image present.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	rt := s.mgr.Runtime()
	if err := rt.Check(ctx); err != nil {
		s.metrics.setEngineUp(false)
		s.writeError(w, r, err)
		return
	}
	s.metrics.setEngineUp(true)
	img, err := rt.ImageInfo(ctx, s.mgr.DefaultImage())
	if err != nil {
		s.writeError(w, r, fmt.Errorf("%w: default image: %w", sandbox.ErrUnavailable, err))
		return
	}
	st := s.mgr.Stats()
	s.writeJSON(w, http.StatusOK, map[string]any{
		"status": "ready", "runtime": rt.Name(), "image": img.Name, "image_digest": img.Digest,
		"running": st.Running, "queued": st.Queued, "max_concurrent": st.MaxConcurrent, "queue_size": st.QueueSize,
	})
}

// writeError answers with err's status, adding Retry-After to 429 and 503.
// A request that carried a body gets "Connection: close": its body may be
// partly unread, and net/http would otherwise try to drain it from what may
// be a deliberately slow client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	retry := 0
	switch status, _ := StatusFor(err); status {
	case http.StatusTooManyRequests:
		retry = s.metrics.retryAfter(s.mgr.Stats())
	case http.StatusServiceUnavailable:
		retry = 5
	case http.StatusInternalServerError:
		s.log.Error("internal error", "err", err)
	}
	s.deadline(w)
	WriteError(w, err, retry)
	flush(w)
}

// flush puts a finished answer on the wire before the handler returns, so a
// shutdown that waits for handlers does not close a connection with the
// answer still buffered.
func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", api.ContentTypeJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	s.deadline(w)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.log.Debug("write response", "err", err)
	}
	flush(w)
}

// writeRaw answers 200 with a body already encoded.
func (s *Server) writeRaw(w http.ResponseWriter, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	s.deadline(w)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	flush(w)
}

func (s *Server) deadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
}
