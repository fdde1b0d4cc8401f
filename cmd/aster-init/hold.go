package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/asterhq/aster/internal/initproto"
)

// runHold is PID 1 of a session sandbox (-hold). It says hello, reaps
// whatever is orphaned to it, and exits when the host closes its stdin: the
// PID namespace, and every process of the session with it, then ends.
//
// With serve (-serve-execs) it also serves the session's execs: each exec
// is a channel of its streams (initproto.TypeChan) speaking the one-shot
// protocol, and its job is forked under the job uid exactly as a one-shot
// init forks its job. For that the holder keeps CAP_SETUID and CAP_SETGID
// in its permitted and effective sets while it holds, and nothing else: the
// bounding set is empty, the inheritable and ambient sets are too, so no
// process it starts carries a capability past its exec, and a job (another
// uid) can neither signal, ptrace nor prlimit it. Where init has no second
// uid (the job runs as init's), the holder has no capability at all and
// still serves execs.
//
// The runtime may also start a further aster-init beside it (`crun exec`,
// `docker exec`) for what channels do not carry (terminals, files, egress),
// and for every exec when the holder does not serve them: it then keeps no
// capability and ignores channel frames.
func (a *agent) runHold(serve bool) int {
	// Keep exactly what forking a job under its uid takes, if anything.
	var err error
	if serve && a.id.separate {
		err = capset(capData{effective: holdCaps, permitted: holdCaps})
	} else {
		err = dropCapabilities()
	}
	if err != nil {
		logf("capabilities: %v", err)
		return 1
	}
	hello, _ := json.Marshal(initproto.Hello{Version: initproto.Version, PID: os.Getpid(), Execs: serve})
	if err := a.out.WriteFrame(initproto.TypeHello, hello); err != nil {
		return 1
	}
	h := &holder{a: a, servesExecs: serve, jobs: newReaper(), chans: map[uint32]*initproto.ChanBuffer{}}
	sigchld := make(chan os.Signal, 64)
	signal.Notify(sigchld, syscall.SIGCHLD)
	hostGone := make(chan struct{})
	go func() {
		defer close(hostGone)
		h.dispatch()
	}()
	for {
		select {
		case <-sigchld:
			h.jobs.reap()
		case <-hostGone:
			return 0
		}
	}
}

// holdCaps are the capabilities the holder keeps: to fork a job under the
// job's uid and gid (setgroups, setresgid, setresuid in the child).
const holdCaps = 1<<capSetgid | 1<<capSetuid

// Bounds on what the holder takes from the host for its execs.
const (
	// maxExecs is how many execs may run at once; a further one is refused
	// (its channel ended at once: the host reports no result for it).
	maxExecs = 256
	// chanBufferBytes is what one exec's input may hold unread (its job
	// header, at most a stdin window of stdin).
	chanBufferBytes = 4 << 20
)

// holder serves a session's execs.
type holder struct {
	a           *agent
	servesExecs bool // serve execs over channels (else channel frames are dropped)
	jobs        *reaper

	mu    sync.Mutex
	chans map[uint32]*initproto.ChanBuffer // the execs' input, by channel
	last  uint32                           // the highest channel opened
}

// dispatch reads the host's frames until the host closes the stream.
func (h *holder) dispatch() {
	hellos := 0
	for {
		f, err := h.a.in.Next()
		if err != nil {
			h.closeAll()
			return
		}
		switch f.Type {
		case initproto.TypeHello:
			if hellos < maxHelloRequests {
				hellos++
				if h.a.answerHello(f.Payload) != nil {
					h.closeAll()
					return
				}
			}
		case initproto.TypeChan:
			id, data, err := initproto.DecodeChan(f.Payload)
			if err != nil || !h.servesExecs {
				continue
			}
			if in := h.channel(id); in != nil {
				_, _ = in.Write(data)
			}
		case initproto.TypeChanEnd:
			if id, err := initproto.DecodeChanEnd(f.Payload); err == nil && h.servesExecs {
				h.endChannel(id)
			}
		}
		// Anything else is not for the holder; it is dropped.
	}
}

// channel returns the input of exec id, opening it (and starting the exec)
// when id is new; nil for a channel that is over, or one too many.
func (h *holder) channel(id uint32) *initproto.ChanBuffer {
	h.mu.Lock()
	defer h.mu.Unlock()
	if in, ok := h.chans[id]; ok {
		return in
	}
	if id <= h.last {
		return nil // over: a channel is never reopened
	}
	h.last = id
	if len(h.chans) >= maxExecs {
		_ = h.a.out.WriteFrame(initproto.TypeChanEnd, initproto.EncodeChanEnd(id))
		return nil
	}
	in := initproto.NewChanBuffer(chanBufferBytes)
	h.chans[id] = in
	go h.serve(id, in)
	return in
}

// endChannel ends the host's side of exec id: its job is ended. A channel
// the host ends before sending anything is over at once.
func (h *holder) endChannel(id uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if in, ok := h.chans[id]; ok {
		in.Close()
		return
	}
	if id > h.last {
		h.last = id
		_ = h.a.out.WriteFrame(initproto.TypeChanEnd, initproto.EncodeChanEnd(id))
	}
}

// serve runs exec id: the one-shot protocol over its channel.
func (h *holder) serve(id uint32, in *initproto.ChanBuffer) {
	x := &agent{
		in:      initproto.NewReader(in),
		out:     initproto.NewWriter(initproto.ChanWriter{W: h.a.out, ID: id}),
		workDir: h.a.workDir,
		id:      h.a.id,
		seccomp: h.a.seccomp,
		jobs:    h.jobs,
	}
	x.run()
	in.Close()
	h.mu.Lock()
	delete(h.chans, id)
	h.mu.Unlock()
	_ = h.a.out.WriteFrame(initproto.TypeChanEnd, initproto.EncodeChanEnd(id))
}

// closeAll ends every exec's input: the host is gone, so is every job.
func (h *holder) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, in := range h.chans {
		in.Close()
	}
}

// jobExit is how a job's process ended.
type jobExit struct {
	status syscall.WaitStatus
	rusage syscall.Rusage
	at     time.Time
}

// reaper is init's one waiter: it reaps every child and hands each job
// started through it its own exit. A holder has one for all its execs; a
// one-shot init has one for its job.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan jobExit
}

func newReaper() *reaper { return &reaper{waiting: map[int]chan jobExit{}} }

// start forks a job and registers it before the reaper can reap it.
func (r *reaper) start(fork func() (int, error)) (int, <-chan jobExit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := fork()
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan jobExit, 1)
	r.waiting[pid] = ch
	return pid, ch, nil
}

// reap waits for every child that has ended and returns how many of them
// were no job's (orphans).
func (r *reaper) reap() (others int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		var ru syscall.Rusage
		p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, &ru)
		if err == syscall.EINTR {
			continue
		}
		if p <= 0 || err != nil {
			return others
		}
		if ch, ok := r.waiting[p]; ok {
			delete(r.waiting, p)
			ch <- jobExit{status: ws, rusage: ru, at: time.Now()}
		} else {
			others++
		}
	}
}

// awaitGroupGone waits, for a few seconds at most, until no process of the
// job's process group pgid is left (the holder's reaper reaps them), and
// returns 1 when some were, 0 when the group was already empty.
func awaitGroupGone(pgid int) int {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return 0
	}
	limit := time.Now().Add(3 * time.Second)
	for syscall.Kill(-pgid, 0) != syscall.ESRCH {
		if time.Now().After(limit) {
			logf("process group %d still there after SIGKILL", pgid)
			break
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(5 * time.Millisecond)
	}
	return 1
}
