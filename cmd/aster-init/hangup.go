package main

import (
	"golang.org/x/sys/unix"
)

// hangupPoll is how long one poll for a hang-up waits before it checks
// whether it should stop.
const hangupPoll = 500

// watchHangup closes hup when the host end of fd hangs up (every writer of a
// pipe closed, or the peer of a socket shut down), whether or not unread data
// remains in it. It asks only for the hang-up events, so pending data does not
// wake it.
func watchHangup(fd int, hup chan<- struct{}, stop <-chan struct{}) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, err := unix.Poll(fds, hangupPoll)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		if n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLRDHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			close(hup)
			return
		}
	}
}
