package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/api/openapi"
	"github.com/asterhq/aster/internal/health"
	"github.com/asterhq/aster/internal/textclip"
)

// Route is one path the server answers: the methods it takes and whether it
// needs the bearer token (when the server has tokens).
type Route struct {
	Path    string
	Methods []string
	Auth    bool
}

// Routes lists every path the server answers. The OpenAPI description
// describes exactly these paths and methods (a test holds them together);
// any other path is 404, any other method 405 with Allow.
func Routes() []Route {
	post := []string{http.MethodPost}
	get := []string{http.MethodGet, http.MethodHead}
	return append([]Route{
		{api.RouteExecute, post, true},
		{api.RouteExecuteStream, post, true},
		{api.RouteTest, post, true},
		{api.RouteTestStream, post, true},
		{api.RouteValidate, post, true},
		{api.RouteHealth, get, false},
		{api.RouteReady, get, false},
		{api.RouteMetrics, []string{http.MethodGet}, true},
		{api.RouteOpenAPI, []string{http.MethodGet}, false},
		{api.RouteRuns, []string{http.MethodPost, http.MethodGet}, true},
		{api.RouteRun, []string{http.MethodGet}, true},
		{api.RouteImages, []string{http.MethodGet}, true},
	}, sessionRoutes()...)
}

func lookupRoute(path string) (Route, bool) {
	if id, ok := strings.CutPrefix(path, api.RouteRunPrefix); ok && validRunID(id) {
		path = api.RouteRun
	}
	for _, rt := range Routes() {
		if rt.Path == path {
			return rt, true
		}
	}
	return Route{}, false
}

// validRunID reports an id of the shape the server gives runs (sandbox.NewRunID).
func validRunID(id string) bool {
	if len(id) < 3 || len(id) > 64 || !strings.HasPrefix(id, "r-") {
		return false
	}
	for _, c := range id[2:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func routePaths() string {
	var paths []string
	for _, rt := range Routes() {
		paths = append(paths, rt.Path)
	}
	return strings.Join(paths, ", ")
}

// ServeHTTP routes a request. Every answer, errors included, is JSON.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	start := time.Now()
	route := routeOf(r.URL.Path)
	sw := &statusWriter{ResponseWriter: w}
	q := &reqState{received: start}
	r = r.WithContext(context.WithValue(r.Context(), reqStateKey{}, q))
	defer func() {
		if !q.detached {
			q.finish()
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("handler panic", "route", route, "panic", p)
			if !sw.wroteHeader {
				s.writeError(sw, r, fmt.Errorf("panic: %v", p))
			}
		}
		d := time.Since(start)
		s.metrics.observeRequest(route, sw.status(), d)
		level := slog.LevelInfo
		if route == api.RouteHealth || route == api.RouteReady || route == api.RouteMetrics || route == api.RouteOpenAPI {
			level = slog.LevelDebug
		}
		attrs := []any{"method", r.Method, "route", route, "status", sw.status(),
			"ms", d.Milliseconds(), "run", sw.Header().Get(api.HeaderRunID), "remote", r.RemoteAddr}
		if code := sw.errorCode(); code != "" {
			// A refused request says why in the log too, as the client was told.
			attrs = append(attrs, "code", code)
		}
		s.log.Log(r.Context(), level, "request", attrs...)
	}()

	rt, ok := lookupRoute(route)
	if !ok {
		s.writeError(sw, r, fmt.Errorf("%w: no route %s (have %s)", api.ErrNotFound, clipPath(r.URL.Path), routePaths()))
		return
	}
	if rt.Auth {
		if err := s.opts.Tokens.authorize(r); err != nil {
			s.writeError(sw, r, err)
			return
		}
	}
	if !slices.Contains(rt.Methods, r.Method) {
		sw.Header().Set("Allow", strings.Join(rt.Methods, ", "))
		s.writeError(sw, r, fmt.Errorf("%w: %s takes %s", api.ErrMethodNotAllowed, route, strings.Join(rt.Methods, " or ")))
		return
	}
	switch route {
	case api.RouteHealth:
		s.deadline(sw)
		health.Write(sw) // the one shape of every server's /healthz
	case api.RouteReady:
		s.ready(sw, r)
	case api.RouteMetrics:
		s.metrics.Handler().ServeHTTP(sw, r)
	case api.RouteOpenAPI:
		s.writeRaw(sw, api.ContentTypeJSON, openapi.JSON())
	case api.RouteExecute, api.RouteExecuteStream:
		s.execute(sw, r)
	case api.RouteTest, api.RouteTestStream:
		s.test(sw, r)
	case api.RouteRuns:
		s.runs(sw, r)
	case api.RouteRun:
		s.getRun(sw, r)
	case api.RouteImages:
		s.images(sw, r)
	case api.RouteSessions, api.RouteSession, api.RouteSessionExec, api.RouteSessionRoot, api.RouteSessionFiles,
		api.RouteSessionPause, api.RouteSessionResume, api.RouteSessionSnapshot, api.RouteSessionEgress, api.RouteSnapshots, api.RouteSnapshot,
		api.RouteSessionPTY, api.RouteSessionPTYResize:
		s.serveSessions(sw, r, route)
	case api.RouteValidate:
		if s.opts.Validator == nil {
			s.writeError(sw, r, fmt.Errorf("%w: this server has no validator configured", api.ErrNotFound))
			return
		}
		s.validate(sw, r)
	}
}

// routeOf is the route label of a path for metrics and logs.
func routeOf(p string) string {
	if route, _, _, ok := sessionRoute(p); ok {
		return route
	}
	if rt, ok := lookupRoute(p); ok {
		return rt.Path
	}
	return "other"
}

func clipPath(p string) string {
	return fmt.Sprintf("%q", textclip.Head(p, 64, "..."))
}

// statusWriter records the status for metrics and logs, and the start of an
// error answer for its code. Unwrap lets http.ResponseController reach the
// connection for deadlines and flushes.
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
	errHead     []byte // the first bytes of a 4xx or 5xx body
}

// maxErrHead bounds what statusWriter keeps of an error body.
const maxErrHead = 512

// errorCode is the code of the error answer written ("" for none).
func (w *statusWriter) errorCode() string {
	if w.status() < 400 || len(w.errHead) == 0 {
		return ""
	}
	var body api.ErrorBody
	if json.Unmarshal(w.errHead, &body) == nil {
		return body.Error.Code
	}
	// A long message (a 404 lists every route) is cut off in the head kept;
	// the code comes first, so read the tokens up to it.
	dec := json.NewDecoder(bytes.NewReader(w.errHead))
	for _, want := range []any{json.Delim('{'), "error", json.Delim('{'), "code"} {
		if tok, err := dec.Token(); err != nil || tok != want {
			return ""
		}
	}
	if tok, err := dec.Token(); err == nil {
		code, _ := tok.(string)
		return code
	}
	return ""
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = http.StatusOK, true
	}
	if w.code >= 400 && len(w.errHead) < maxErrHead {
		w.errHead = append(w.errHead, p[:min(len(p), maxErrHead-len(w.errHead))]...)
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if !w.wroteHeader {
		return http.StatusOK
	}
	return w.code
}
