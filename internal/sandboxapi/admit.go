package sandboxapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// admission is what a request holds while its body is read and its run
// goes: the paced body, an upload slot (its own and its client's), or its
// JSON body's bytes.
type admission struct {
	body     *PacedBody
	releases []func()
}

// bodyRead ends the body's pacing: what follows may take as long as the run.
func (a *admission) bodyRead() { a.body.Done() }

func (a *admission) release() {
	a.body.Done()
	for i := len(a.releases) - 1; i >= 0; i-- {
		a.releases[i]()
	}
}

// admitBody admits a request to have its body read. A run is refused at
// once when the queue is already full (so a big body is not read for
// nothing). Nothing else is taken before the body's first byte arrives,
// so a client that sends headers and then waits holds nothing but its
// connection, and only until the first-byte deadline. Then a snapshot
// upload takes one of the upload slots (as many as the runs that can be
// running or queued) and one of its client's; a JSON body reserves its
// bytes in the server's body memory. A client that sends Expect:
// 100-continue is admitted before its body instead (see below).
func (s *Server) admitBody(w http.ResponseWriter, r *http.Request) (*admission, error) {
	if r.URL.Path != api.RouteValidate {
		st := s.mgr.Stats()
		if st.Running >= st.MaxConcurrent && st.Queued >= st.QueueSize {
			s.metrics.Rejected("queue_full")
			return nil, fmt.Errorf("%w: %d sandboxes running and %d waiting; try again later", sandbox.ErrBusy, st.Running, st.Queued)
		}
	}
	if s.opts.MaxBodyBytes > 0 && r.ContentLength > s.opts.MaxBodyBytes {
		return nil, fmt.Errorf("%w: request body of %s is over this server's limit of %s (--max-body)",
			sandbox.ErrTooLarge, units.FormatBytes(r.ContentLength), units.FormatBytes(s.opts.MaxBodyBytes))
	}
	// A client that asked to be told before it sends its body (Expect:
	// 100-continue) is admitted first: a refusal then costs it no upload.
	// It still has only the first-byte deadline to start sending.
	early := expectsContinue(r)
	a := &admission{}
	if !early {
		body, err := PaceBody(w, r, s.pace)
		if err != nil {
			return nil, err
		}
		a.body = body
	}
	fail := func(err error) (*admission, error) {
		a.release()
		return nil, err
	}
	if err := s.admitRead(r, a); err != nil {
		return fail(err)
	}
	if early {
		body, err := PaceBody(w, r, s.pace)
		if err != nil {
			return fail(err)
		}
		a.body = body
	}
	return a, nil
}

// admitRead takes what reading r's body needs: an upload slot (its own and
// its client's) for a snapshot, or the body's bytes for JSON.
func (s *Server) admitRead(r *http.Request, a *admission) error {
	if !isSnapshotUpload(r) {
		res, err := ReserveBody(r, s.bodies)
		if err != nil {
			return err
		}
		a.releases = append(a.releases, res.Release)
		return nil
	}
	release, err := s.clients.take(r)
	if err != nil {
		s.metrics.Rejected("client_uploads")
		return err
	}
	a.releases = append(a.releases, release)
	select {
	case s.uploads <- struct{}{}:
		a.releases = append(a.releases, func() { <-s.uploads })
		return nil
	default:
		s.metrics.Rejected("uploads_full")
		return fmt.Errorf("%w: %d snapshot uploads in progress; try again later", sandbox.ErrBusy, cap(s.uploads))
	}
}

// expectsContinue reports whether the client waits for 100 Continue before
// it sends its body.
func expectsContinue(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Expect"), "100-continue")
}

// snapshotLimit is the workspace size a decoded /v1/execute or /v1/test
// spec asks for: its limits.workdir_size as the run will have it
// (resolved against the defaults, ceilings and bounds). It is BodyOptions.SnapshotLimit.
func (s *Server) snapshotLimit(spec any) (int64, error) {
	var job *api.JobRequest
	switch v := spec.(type) {
	case *api.ExecuteRequest:
		job = &v.JobRequest
	case *api.TestRequest:
		job = &v.JobRequest
	default:
		return s.workspaceCeiling(), nil
	}
	limits, err := s.limits(job.Limits)
	if err != nil {
		return 0, err
	}
	return limits.WorkdirBytes, nil
}
