package sandboxapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serve answers on ln until ctx ends, then shuts down gracefully: it stops
// accepting, fails queued runs with 503, lets running ones finish for up to
// ShutdownGrace, then cancels the rest (their sandboxes are destroyed) and
// returns. Without tokens it refuses a listener that is not on loopback.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := CheckExposure(ln.Addr(), s.opts.Tokens != nil); err != nil {
		ln.Close()
		return err
	}
	base, cancelBase := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelBase(nil)
	s.setBaseContext(base)
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	go s.watchEngine(base)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: no new requests; running jobs may finish", "grace", s.opts.ShutdownGrace)
	s.mgr.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownGrace)
	err := hs.Shutdown(sctx)
	if err == nil {
		// Asynchronous runs get the same grace as the requests.
		err = s.waitBackground(sctx)
	}
	cancel()
	// Sessions end with the server that holds them.
	defer s.closeSessions(context.Background())
	if err != nil {
		s.log.Warn("grace period over: cancelling the runs still going and destroying their sandboxes")
		cancelBase(errors.New("the server is shutting down"))
		done := make(chan struct{})
		go func() { s.inflight.Wait(); s.background.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			s.log.Error("requests still running a minute after cancellation")
		}
		// The cancelled runs have answered; let those answers drain.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
		cancel()
	}
	<-errc
	s.log.Info("stopped")
	return nil
}

// watchEngine keeps aster_engine_up current and logs when the engine goes
// away and comes back.
func (s *Server) watchEngine(ctx context.Context) {
	up := true
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.mgr.Runtime().Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.metrics.setEngineUp(err == nil)
		switch {
		case err != nil && up:
			s.log.Warn("container engine unreachable; runs answer 503 until it is back", "err", err)
		case err == nil && !up:
			s.log.Info("container engine is back")
		}
		up = err == nil
		t := time.NewTimer(s.opts.EngineCheckPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
