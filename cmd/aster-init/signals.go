package main

import (
	"os/signal"
	"syscall"
)

// ignoreSignals makes every signal the job could send to init a no-op. With
// separate uids the job cannot signal init at all; this is the second line,
// and the only one where the runtime gives init no second uid (Kubernetes).
// As PID 1 of its namespace, init then receives nothing from inside it: the
// kernel drops signals whose disposition is "ignore", SIGKILL and SIGSTOP
// included, and the Go runtime discards the few it must keep a handler for
// (SIGSEGV and friends) when they come from kill(2).
//
// SIGCHLD stays (init reaps), SIGURG stays (the Go scheduler's preemption
// signal; from kill(2) it is harmless), and, when the job cannot reach init,
// SIGTERM and SIGINT stay: only the engine or the host can send them then, and
// they mean "stop the job".
func ignoreSignals(hostCanStop bool) {
	for n := 1; n <= 64; n++ {
		switch s := syscall.Signal(n); s {
		case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGCHLD, syscall.SIGURG:
			continue
		case syscall.SIGTERM, syscall.SIGINT:
			if hostCanStop {
				continue
			}
			signal.Ignore(s)
		default:
			signal.Ignore(s)
		}
	}
}
