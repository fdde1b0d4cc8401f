package sandboxapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// DefaultMaxSessionsPerToken bounds the live sessions of one token.
const DefaultMaxSessionsPerToken = 16

// sessionTable holds the live sessions of the server by id, each with the
// owner (a digest of the token that created it) it answers to.
type sessionTable struct {
	mu   sync.Mutex
	byID map[string]*ownedSession
}

type ownedSession struct {
	owner string
	s     *sandbox.Sandbox
	// egress is the session's relay when the server has egress profiles.
	egress *egress.Switch
}

// sessionRoutes are the session routes, for Routes.
func sessionRoutes() []Route {
	get := []string{http.MethodGet}
	post := []string{http.MethodPost}
	return []Route{
		{api.RouteSessions, []string{http.MethodGet, http.MethodPost}, true},
		{api.RouteSession, []string{http.MethodGet, http.MethodDelete}, true},
		{api.RouteSessionExec, []string{http.MethodPost}, true},
		{api.RouteSessionRoot, []string{http.MethodGet, http.MethodPut}, true},
		{api.RouteSessionFiles, []string{http.MethodGet, http.MethodPut, http.MethodDelete}, true},
		{api.RouteSessionPause, post, true},
		{api.RouteSessionResume, post, true},
		{api.RouteSessionSnapshot, post, true},
		{api.RouteSessionEgress, []string{http.MethodPut}, true},
		{api.RouteSessionPTY, get, true},
		{api.RouteSessionPTYResize, post, true},
		{api.RouteSnapshots, get, true},
		{api.RouteSnapshot, []string{http.MethodDelete}, true},
	}
}

// sessionRoute maps a request path under /v1/sessions to its route template,
// with the id and file path it names.
func sessionRoute(p string) (route, id, file string, ok bool) {
	if p == api.RouteSessions {
		return api.RouteSessions, "", "", true
	}
	if p == api.RouteSnapshots {
		return api.RouteSnapshots, "", "", true
	}
	if id, found := strings.CutPrefix(p, api.RouteSnapshots+"/"); found && id != "" && !strings.Contains(id, "/") {
		return api.RouteSnapshot, id, "", true
	}
	rest, found := strings.CutPrefix(p, api.RouteSessions+"/")
	if !found {
		return "", "", "", false
	}
	id, sub, _ := strings.Cut(rest, "/")
	if id == "" {
		return "", "", "", false
	}
	switch {
	case !strings.Contains(rest, "/"):
		return api.RouteSession, id, "", true
	case sub == "exec":
		return api.RouteSessionExec, id, "", true
	case sub == "pause":
		return api.RouteSessionPause, id, "", true
	case sub == "resume":
		return api.RouteSessionResume, id, "", true
	case sub == "snapshot":
		return api.RouteSessionSnapshot, id, "", true
	case sub == "egress":
		return api.RouteSessionEgress, id, "", true
	case sub == "pty":
		return api.RouteSessionPTY, id, "", true
	case sub == "pty/resize":
		return api.RouteSessionPTYResize, id, "", true
	case sub == "files":
		return api.RouteSessionRoot, id, "", true
	case strings.HasPrefix(sub, "files/"):
		return api.RouteSessionFiles, id, strings.TrimPrefix(sub, "files/"), true
	}
	return "", "", "", false
}

// lookup returns the caller's session id: ErrSessionGone for an unknown
// one, one that ended, and another token's alike.
func (s *Server) lookupSession(r *http.Request, id string) (*sandbox.Sandbox, error) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	o, ok := s.sessions.byID[id]
	if !ok || o.s == nil || o.owner != s.owner(r) {
		return nil, fmt.Errorf("%w %s: no such session (it may have ended)", sandbox.ErrSessionGone, clipPath(id))
	}
	select {
	case <-o.s.Done():
		delete(s.sessions.byID, id)
		return nil, fmt.Errorf("%w %s has ended (%s)", sandbox.ErrSessionGone, id, o.s.EndReason())
	default:
	}
	return o.s, nil
}

// serveSessions answers a session route (already authorized, method checked).
func (s *Server) serveSessions(w http.ResponseWriter, r *http.Request, route string) {
	_, id, file, _ := sessionRoute(r.URL.Path)
	switch route {
	case api.RouteSnapshots:
		s.writeJSON(w, http.StatusOK, api.SessionSnapshotList{Snapshots: s.snapshots.list(s.owner(r))})
		return
	case api.RouteSnapshot:
		if err := s.snapshots.remove(s.owner(r), id); err != nil {
			s.writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if route == api.RouteSessions {
		if r.Method == http.MethodPost {
			s.createSession(w, r)
		} else {
			s.listSessions(w, r)
		}
		return
	}
	sess, err := s.lookupSession(r, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case route == api.RouteSession && r.Method == http.MethodDelete:
		if err := sess.Close(r.Context()); err != nil {
			s.log.Warn("close session", "session", id, "err", err)
		}
		s.sessions.mu.Lock()
		delete(s.sessions.byID, id)
		s.sessions.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case route == api.RouteSession:
		s.writeJSON(w, http.StatusOK, s.sessionWire(id, sess.Info()))
	case route == api.RouteSessionEgress:
		s.setSessionEgress(w, r, id, sess)
	case route == api.RouteSessionExec:
		s.sessionExec(w, r, sess)
	case route == api.RouteSessionPTY:
		s.openTerminal(w, r, sess)
	case route == api.RouteSessionPTYResize:
		s.resizeTerminal(w, r, sess)
	case (route == api.RouteSessionPause || route == api.RouteSessionResume) && r.ContentLength != 0:
		s.writeError(w, r, sandbox.Invalidf("%s takes no body", route))
	case route == api.RouteSessionPause, route == api.RouteSessionResume:
		op := sess.Pause
		if route == api.RouteSessionResume {
			op = sess.Resume
		}
		if err := op(r.Context()); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeJSON(w, http.StatusOK, s.sessionWire(id, sess.Info()))
	case route == api.RouteSessionSnapshot:
		s.snapshotSession(w, r, sess)
	case wantsTar(r):
		s.archive(w, r, sess, file)
	case route == api.RouteSessionRoot && r.Method == http.MethodPut:
		s.writeError(w, r, sandbox.Invalidf("PUT on /files needs ?format=tar (an archive unpacked into /work); a file goes to /files/{path}"))
	case route == api.RouteSessionRoot:
		s.listFiles(w, r, sess, "")
	case r.Method == http.MethodPut:
		s.putFile(w, r, sess, file)
	case r.Method == http.MethodDelete:
		if err := sess.DeleteFile(r.Context(), file); err != nil {
			s.writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(file, "/"):
		s.listFiles(w, r, sess, file)
	default:
		b, err := sess.GetFile(r.Context(), file)
		if err != nil && strings.Contains(err.Error(), "Is a directory") {
			s.listFiles(w, r, sess, file)
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeRaw(w, api.ContentTypeOctets, b)
	}
}

func sessionWire(i sandbox.SessionInfo) api.Session {
	return api.Session{ID: i.ID, Image: i.Image, ImageDigest: i.ImageDigest, Runtime: i.Runtime,
		CreatedAt: i.Created.UTC(), ExpiresAt: i.ExpiresAt.UTC(), LastUsedAt: i.LastUsed.UTC(),
		IdleTimeoutMS: i.IdleTimeout.Milliseconds(), Running: i.Running, Paused: i.Paused}
}

// readSmallJSON reads a JSON body of at most the server's body cap.
func (s *Server) readSmallJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	err := decodeSpec(body, v)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || (err != nil && strings.Contains(err.Error(), "request body too large")) {
		return fmt.Errorf("%w: the body is over the server's cap of %s", sandbox.ErrTooLarge, units.FormatBytes(s.opts.MaxBodyBytes))
	}
	return err
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req api.SessionRequest
	if err := s.readSmallJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	limits, err := s.limits(req.Limits)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	spec := sandbox.SessionSpec{Image: req.Image, Env: req.Env, Limits: limits}
	for name, v := range map[string]*time.Duration{"ttl": &spec.TTL, "idle_timeout": &spec.IdleTimeout} {
		q := map[string]api.Quantity{"ttl": req.TTL, "idle_timeout": req.IdleTimeout}[name]
		if q == "" {
			continue
		}
		d, err := units.ParseDuration(string(q))
		if err != nil || d <= 0 {
			s.writeError(w, r, sandbox.Invalidf("%s %q: give a positive duration such as \"30m\" or a number of seconds", name, q))
			return
		}
		*v = d
	}
	if len(req.Files) > 0 {
		spec.Files = make(map[string][]byte, len(req.Files))
		for _, name := range slices.Sorted(maps.Keys(req.Files)) {
			b, err := req.Files[name].Bytes()
			if err != nil {
				s.writeError(w, r, sandbox.Invalidf("files[%q]: %v", name, err))
				return
			}
			spec.Files[name] = b
		}
	}
	spec.ID = sandbox.NewSessionID()
	sw, gen, err := s.sessionSwitch(r, &spec, req.EgressProfile)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if sw != nil {
		spec.Egress = sw
		// A session that is not made ends its relay.
		defer func() {
			if spec.Egress != nil {
				sw.Close()
			}
		}()
	}
	owner := s.owner(r)
	if req.FromSnapshot != "" {
		mem, release, err := s.snapshots.getMemory(owner, req.FromSnapshot, time.Now())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
		if mem != nil {
			// A fork runs the image and limits of the session it was taken of.
			if req.Limits != (api.Limits{}) {
				s.writeError(w, r, sandbox.Invalidf("a fork of a memory snapshot keeps the limits of the session it was taken of: give no limits"))
				return
			}
			spec.Limits, spec.Memory = sandbox.Limits{}, mem
		} else {
			archive, err := s.snapshots.get(owner, req.FromSnapshot, time.Now())
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			defer archive.Close()
			spec.Archive = archive
		}
	}
	s.sessions.mu.Lock()
	n, all := 0, 0
	for id, o := range s.sessions.byID {
		if o.s != nil {
			select {
			case <-o.s.Done():
				delete(s.sessions.byID, id)
				continue
			default:
			}
		}
		all++
		if o.owner == owner {
			n++
		}
	}
	max := s.opts.MaxSessionsPerToken
	if max == 0 {
		max = DefaultMaxSessionsPerToken
	}
	if n >= max {
		s.sessions.mu.Unlock()
		s.writeError(w, r, fmt.Errorf("%w: this token has %d live sessions, the most this server allows one token; delete one first", sandbox.ErrBusy, n))
		return
	}
	if total := s.maxSessions(); all >= total {
		s.sessions.mu.Unlock()
		s.writeError(w, r, fmt.Errorf("%w: the server holds %d live sessions, the most it allows (--max-sessions); retry when one ends", sandbox.ErrBusy, all))
		return
	}
	// The place is taken before the sandbox exists, so that concurrent
	// creates cannot pass the cap together.
	placeholder := &ownedSession{owner: owner, egress: sw}
	s.sessions.byID[spec.ID] = placeholder
	s.sessions.mu.Unlock()

	// The session outlives the request that made it.
	sess, err := s.mgr.OpenSession(context.WithoutCancel(r.Context()), spec)
	s.sessions.mu.Lock()
	if err != nil {
		delete(s.sessions.byID, spec.ID)
	} else {
		placeholder.s = sess
	}
	s.sessions.mu.Unlock()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	spec.Egress = nil // the session owns its relay now
	if sw != nil {
		s.settle(sess.ID(), sw, gen)
	}
	w.Header().Set("Location", api.RouteSessions+"/"+sess.ID())
	s.writeJSON(w, http.StatusCreated, s.sessionWire(sess.ID(), sess.Info()))
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	owner := s.owner(r)
	out := api.SessionList{Sessions: []api.Session{}}
	s.sessions.mu.Lock()
	for _, o := range s.sessions.byID {
		if o.owner != owner || o.s == nil {
			continue
		}
		select {
		case <-o.s.Done():
			continue
		default:
		}
		out.Sessions = append(out.Sessions, withProfile(sessionWire(o.s.Info()), o.egress))
	}
	s.sessions.mu.Unlock()
	slices.SortFunc(out.Sessions, func(a, b api.Session) int { return a.CreatedAt.Compare(b.CreatedAt) })
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) sessionExec(w http.ResponseWriter, r *http.Request, sess *sandbox.Sandbox) {
	var req api.SessionExecRequest
	if err := s.readSmallJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	// Per-exec limits go through the one resolver, with the server's
	// ceilings; only the per-job fields are taken from it.
	l, err := s.limits(api.Limits{Timeout: req.Timeout, OutputLimit: req.OutputLimit, OutputCeiling: req.OutputCeiling})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e := sandbox.ExecSpec{Argv: req.Argv, Env: req.Env, Workdir: req.Workdir}
	if req.Timeout != "" {
		e.TimeoutMS = l.TimeoutMS
	}
	if req.OutputLimit != "" {
		e.OutputBytes = l.OutputBytes
	}
	if req.OutputCeiling != "" {
		e.OutputCeilingBytes = l.OutputCeilingBytes
	}
	if req.Stdin != "" || req.StdinEncoding != "" {
		b, err := api.DecodeText(req.Stdin, req.StdinEncoding)
		if err != nil {
			s.writeError(w, r, sandbox.Invalidf("stdin: %v", err))
			return
		}
		e.Stdin = bytes.NewReader(b)
	}
	job, err := sess.Job(e)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.answer(w, r, sess.ID(), func(ctx context.Context, st *streamer) (sandbox.Result, error) {
		if st != nil {
			st.start()
			job.OnOutput = st.output
		}
		return sess.RunJob(ctx, job)
	}, func(res sandbox.Result) any { return res.Wire() })
}

func (s *Server) putFile(w http.ResponseWriter, r *http.Request, sess *sandbox.Sandbox, file string) {
	limit := min(s.opts.MaxBodyBytes, sess.Info().Limits.WorkdirBytes)
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = fmt.Errorf("%w: a file over %s (the smaller of the body cap and the session's /work)", sandbox.ErrTooLarge, units.FormatBytes(limit))
		}
		s.writeError(w, r, err)
		return
	}
	if err := sess.PutFile(r.Context(), file, b); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, sess *sandbox.Sandbox, dir string) {
	entries, err := sess.List(r.Context(), strings.TrimSuffix(dir, "/"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.FileList{Path: "/work/" + strings.TrimSuffix(dir, "/"), Entries: make([]api.FileEntry, 0, len(entries))}
	for _, e := range entries {
		out.Entries = append(out.Entries, api.FileEntry{Name: e.Name, Type: e.Type, Size: e.Size, ModTime: e.ModTime})
	}
	s.writeJSON(w, http.StatusOK, out)
}

// closeSessions ends every session (the server is shutting down).
func (s *Server) closeSessions(ctx context.Context) {
	s.sessions.mu.Lock()
	all := slices.Collect(maps.Values(s.sessions.byID))
	s.sessions.byID = map[string]*ownedSession{}
	s.sessions.mu.Unlock()
	for _, o := range all {
		if o.s != nil {
			_ = o.s.Close(ctx)
		}
	}
	s.snapshots.close()
}

// maxSessions is the server-wide session cap.
func (s *Server) maxSessions() int {
	if s.opts.MaxSessions > 0 {
		return s.opts.MaxSessions
	}
	return max(1, s.mgr.Stats().MaxConcurrent/2)
}

// wantsTar reports whether a file request is about a directory archive.
func wantsTar(r *http.Request) bool {
	return r.URL.Query().Get("format") == "tar"
}

// archive answers GET (a tar of the directory) and PUT (a tar unpacked into
// it) with ?format=tar.
func (s *Server) archive(w http.ResponseWriter, r *http.Request, sess *sandbox.Sandbox, dir string) {
	dir = strings.TrimSuffix(dir, "/")
	switch r.Method {
	case http.MethodGet:
		b, err := sess.GetArchive(r.Context(), dir)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeRaw(w, api.ContentTypeTar, b)
	case http.MethodPut:
		limit := min(s.opts.MaxBodyBytes, sess.Info().Limits.WorkdirBytes+sess.Info().Limits.WorkdirBytes/4+1<<20)
		body := http.MaxBytesReader(w, r.Body, limit)
		if err := sess.PutArchive(r.Context(), dir, body); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				err = fmt.Errorf("%w: an archive over %s (the smaller of the body cap and the session's /work)", sandbox.ErrTooLarge, units.FormatBytes(limit))
			}
			s.writeError(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		s.writeError(w, r, sandbox.Invalidf("?format=tar is for GET and PUT"))
	}
}

// snapshotSession stores the session's /work as a snapshot of the caller's,
// or with {"memory": true} a checkpoint of its whole sandbox.
func (s *Server) snapshotSession(w http.ResponseWriter, r *http.Request, sess *sandbox.Sandbox) {
	var req api.SnapshotRequest
	if r.ContentLength != 0 {
		if err := s.readSmallJSON(w, r, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if req.Memory {
		if err := sess.CanSnapshotMemory(); err != nil {
			s.writeError(w, r, err)
			return
		}
		// A checkpoint ends and restores the sandbox: a client that goes
		// away meanwhile must not cut it short.
		ctx := context.WithoutCancel(r.Context())
		sn, err := s.snapshots.putMemory(s.owner(r), sess.ID(), func(dir string) (sandbox.MemorySnapshot, error) {
			return sess.SnapshotMemory(ctx, dir)
		}, time.Now())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		w.Header().Set("Location", api.RouteSnapshots+"/"+sn.id)
		s.writeJSON(w, http.StatusCreated, sn.wire())
		return
	}
	b, err := sess.GetArchive(r.Context(), "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sn, err := s.snapshots.put(s.owner(r), sess.ID(), b, time.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", api.RouteSnapshots+"/"+sn.id)
	s.writeJSON(w, http.StatusCreated, sn.wire())
}
