// Package health is the liveness answer every Aster server gives on GET /healthz (`aster
// sandbox serve`, `aster app serve`, `aster mcp --http`): one shape, so one probe
// configuration fits them all. Readiness (/readyz) stays each server's own.
package health

import "net/http"

// Route is the liveness path of every server.
const Route = "/healthz"

// Body is the answer: a JSON object whose status is "ok" while the process serves.
const Body = `{"status":"ok"}` + "\n"

// ContentType is the answer's media type.
const ContentType = "application/json"

// Write answers a liveness probe.
func Write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(Body))
}

// Handler answers GET and HEAD with Write and other methods with 405.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		Write(w)
	})
}
