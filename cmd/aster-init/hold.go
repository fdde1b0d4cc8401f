package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"syscall"

	"github.com/asterhq/aster/internal/initproto"
)

// runHold is PID 1 of a session sandbox (-hold): it runs no job itself. Each
// job of the session is a further aster-init the runtime starts inside the
// sandbox (`crun exec`, `docker exec`) with stdio of its own, speaking the
// one-shot protocol, so every exec gets the same verdict as a one-shot run.
// The holder says hello, gives up every capability, reaps whatever is
// orphaned to it, and exits when the host closes its stdin: the PID
// namespace, and every process of the session with it, then ends.
func (a *agent) runHold() int {
	hello, _ := json.Marshal(initproto.Hello{Version: initproto.Version, PID: os.Getpid()})
	if err := a.out.WriteFrame(initproto.TypeHello, hello); err != nil {
		return 1
	}
	// The holder starts nothing: it needs no capability.
	if err := dropCapabilities(); err != nil {
		logf("drop capabilities: %v", err)
		return 1
	}
	sigchld := make(chan os.Signal, 64)
	signal.Notify(sigchld, syscall.SIGCHLD)
	hostGone := make(chan struct{})
	go func() {
		defer close(hostGone)
		for n := 0; ; n++ {
			f, err := a.in.Next()
			if err != nil {
				return
			}
			if f.Type == initproto.TypeHello && n < maxHelloRequests {
				if a.answerHello(f.Payload) != nil {
					return
				}
			}
			// Anything else is not for the holder; it is dropped.
		}
	}()
	for {
		select {
		case <-sigchld:
			for {
				var ws syscall.WaitStatus
				p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if err == syscall.EINTR {
					continue
				}
				if p <= 0 || err != nil {
					break
				}
			}
		case <-hostGone:
			return 0
		}
	}
}
