package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/health"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandboxapi"
	"github.com/asterhq/aster/internal/units"
)

// Path is where the streamable HTTP transport is served.
const Path = "/mcp"

// EventStoreBytes bounds the events kept for stream resumption.
const EventStoreBytes = 32 << 20

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	// Tokens are the accepted bearer tokens (sandboxapi.LoadTokens reads the
	// orchestrator's token file); nil means no authentication, which
	// ListenHTTP allows only on a loopback address.
	Tokens *sandboxapi.Tokens
	// MaxBodyBytes caps one request body (the files of a call travel in it).
	MaxBodyBytes int64
	// SessionTimeout closes sessions idle for that long.
	SessionTimeout time.Duration
	// MaxSessions bounds the sessions open at once, and MaxSessionsPerToken
	// those of one token (without tokens, of every client together); zero
	// is config's default. Past either, an initialize is refused (429 for a
	// token's cap, 503 for the server's) with a JSON-RPC error naming it.
	MaxSessions, MaxSessionsPerToken int
	// MaxBodyInFlightBytes bounds the request-body bytes being served at
	// once (default config.DefaultMCPBodiesInFlight × MaxBodyBytes; negative:
	// no bound). A body reserves its length before it is read and keeps it
	// until its call is answered; past the bound the answer is 429.
	MaxBodyInFlightBytes int64
	// Pace bounds how slowly a body may arrive (zero: sandboxapi.DefaultPace).
	Pace sandboxapi.Pace
	// Metrics, when set, is served at GET /metrics in the Prometheus text
	// format, behind the same tokens as /mcp, with the open sessions added
	// (aster_mcp_sessions, aster_mcp_sessions_max).
	Metrics *prometheus.Registry
}

// Handler returns the HTTP handler: the streamable transport at /mcp behind
// bearer-token auth (when tokens are set), the SDK's DNS-rebinding protection
// (a request that reached a loopback address with a foreign Host is refused)
// and cross-origin protection against browsers; /healthz answers without auth.
func (s *Server) Handler(o HTTPOptions) http.Handler {
	h, _ := s.handler(o)
	return h
}

// handler is Handler, with the gate that counts its sessions.
func (s *Server) handler(o HTTPOptions) (http.Handler, *sessionGate) {
	return s.handlerWith(o, newEventStore(EventStoreBytes))
}

// handlerWith is handler with the event store given.
func (s *Server) handlerWith(o HTTPOptions, events mcp.EventStore) (http.Handler, *sessionGate) {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = config.DefaultMaxBodyBytes
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = config.DefaultMCPSessionTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = config.DefaultMCPMaxSessions
	}
	if o.MaxSessionsPerToken <= 0 {
		o.MaxSessionsPerToken = config.DefaultMCPSessionsPerToken
	}
	if o.MaxBodyInFlightBytes == 0 {
		o.MaxBodyInFlightBytes = config.DefaultMCPBodiesInFlight * o.MaxBodyBytes
	}
	if o.Pace == (sandboxapi.Pace{}) {
		o.Pace = sandboxapi.DefaultPace()
	}
	// An event store makes response streams resumable: a client whose
	// connection breaks during a long run reconnects with Last-Event-ID and
	// still gets its result. It is bounded; the oldest events go first.
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:              sdkLogger(s.log),
		EventStore:          events,
		SessionTimeout:      o.SessionTimeout,
		MaxRequestBodyBytes: o.MaxBodyBytes,
	})
	gate := newSessionGate(h, s.mcp.Sessions, o, s.log)
	h = gate
	h = limitBodies(h, sandboxapi.NewBudget(o.MaxBodyInFlightBytes, "memory for request bodies (--max-body-in-flight)"), o)
	if o.Tokens != nil {
		h = auth.RequireBearerToken(verifier(o.Tokens), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	h = http.NewCrossOriginProtection().Handler(h)
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	mux.Handle("GET "+health.Route, health.Handler())
	if o.Metrics != nil {
		mux.Handle("GET "+MetricsRoute, s.metricsHandler(o, gate))
	}
	return mux, gate
}

// MetricsRoute serves HTTPOptions.Metrics.
const MetricsRoute = "/metrics"

// metricsHandler serves o.Metrics with the session gauges registered on it, behind o's
// tokens. Registering twice (a second handler on one registry) keeps the first gauges.
func (s *Server) metricsHandler(o HTTPOptions, gate *sessionGate) http.Handler {
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aster_mcp_sessions", Help: "MCP sessions open or being opened."},
		func() float64 { n, _ := gate.counts(); return float64(n) })
	max := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aster_mcp_sessions_max", Help: "MCP sessions allowed at once (mcp.max_sessions)."},
		func() float64 { return float64(gate.max) })
	for _, c := range []prometheus.Collector{open, max} {
		if err := o.Metrics.Register(c); err != nil {
			s.log.Debug("metrics: keeping the registered collector", "err", err)
		}
	}
	var h http.Handler = promhttp.HandlerFor(o.Metrics, promhttp.HandlerOpts{Registry: o.Metrics})
	if o.Tokens != nil {
		h = auth.RequireBearerToken(verifier(o.Tokens), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	return h
}

// ErrOpenListener is returned for a non-loopback address without tokens.
var ErrOpenListener = errors.New("refusing to serve MCP without bearer tokens on a non-loopback address: anyone who can reach it could run code on this host (give a token file, or listen on 127.0.0.1)")

// ListenHTTP binds addr and refuses, before serving anything, a listener that
// is not on a loopback address when no tokens are configured. The check is on
// the bound address, so "", "0.0.0.0", "[::]" and host names that resolve
// elsewhere are all caught.
func ListenHTTP(addr string, o HTTPOptions) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if o.Tokens == nil && !isLoopback(ln.Addr()) {
		ln.Close()
		return nil, fmt.Errorf("%w (address %s)", ErrOpenListener, addr)
	}
	return ln, nil
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// ServeHTTP serves the handler on ln until ctx ends; then it cancels every
// running tool call (their sandboxes are destroyed) and shuts down.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, o HTTPOptions) error {
	srv := &http.Server{
		Handler:           s.Handler(o),
		ReadHeaderTimeout: config.DefaultReadHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          nil,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	closeErr := s.Close(shutdown)
	// Open SSE streams never go idle, so Shutdown gets a short grace only.
	sctx, scancel := context.WithTimeout(shutdown, 2*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	return closeErr
}

// ServeStdio serves one session of newline-delimited JSON-RPC on r and w (the
// process's stdin and stdout) until the client closes it or ctx ends; then it
// cancels running calls and waits for their sandboxes to be destroyed.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.ServeTransport(ctx, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// ServeTransport serves one session on any transport, as ServeStdio does.
func (s *Server) ServeTransport(ctx context.Context, t mcp.Transport) error {
	err := s.mcp.Run(ctx, t)
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if cerr := s.Close(shutdown); cerr != nil {
		return cerr
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// limitBodies admits a body before the SDK reads it (the SDK reads it whole
// and decodes it more than once, so memory grows with every body in flight):
// it waits for the first byte without holding anything, paces the rest, and
// reserves the body's bytes in budget until the call is answered. A body of
// unknown length is read here, reserving as it comes, so that a refusal is
// still a 429 and not a read error inside the SDK.
func limitBodies(next http.Handler, budget *sandboxapi.Budget, o HTTPOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		refuse := func(err error) {
			w.Header().Set("Connection", "close")
			sandboxapi.WriteError(w, err, 1)
		}
		if r.ContentLength > o.MaxBodyBytes {
			refuse(fmt.Errorf("%w: request body of %s is over this server's limit of %s (--max-body)",
				sandbox.ErrTooLarge, units.FormatBytes(r.ContentLength), units.FormatBytes(o.MaxBodyBytes)))
			return
		}
		// A client waiting for 100 Continue is admitted before it sends:
		// a refusal then costs it no upload.
		early := strings.EqualFold(r.Header.Get("Expect"), "100-continue")
		var body *sandboxapi.PacedBody
		var err error
		if !early {
			if body, err = sandboxapi.PaceBody(w, r, o.Pace); err != nil {
				refuse(err)
				return
			}
		}
		res, err := sandboxapi.ReserveBody(r, budget)
		if err != nil {
			body.Done()
			refuse(err)
			return
		}
		defer res.Release()
		if early {
			if body, err = sandboxapi.PaceBody(w, r, o.Pace); err != nil {
				refuse(err)
				return
			}
		}
		if r.ContentLength < 0 {
			data, err := io.ReadAll(io.LimitReader(r.Body, o.MaxBodyBytes+1))
			if err == nil && int64(len(data)) > o.MaxBodyBytes {
				err = fmt.Errorf("%w: request body is over this server's limit of %s (--max-body)", sandbox.ErrTooLarge, units.FormatBytes(o.MaxBodyBytes))
			}
			if err != nil {
				body.Done()
				if status, _ := sandboxapi.StatusFor(err); status == http.StatusInternalServerError {
					err = sandbox.Invalidf("reading the request body: %v", err)
				}
				refuse(err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
			r.ContentLength = int64(len(data))
		}
		// The SDK reads the body before it starts the call: the pace ends
		// with the body, not with the call.
		r.Body = &endOnEOF{ReadCloser: r.Body, done: body.Done}
		defer body.Done()
		next.ServeHTTP(w, r)
	})
}

// endOnEOF calls done when the body has been read to its end.
type endOnEOF struct {
	io.ReadCloser
	done func()
}

func (e *endOnEOF) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if err != nil {
		e.done()
	}
	return n, err
}
