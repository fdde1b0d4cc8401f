package runtimekit

import (
	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
)

// forwardResizes passes a terminal job's new sizes on to init until done
// is closed. It starts once the job header is sent: a resize frame is only
// valid after it.
func forwardResizes(fw *initproto.Writer, t *sandbox.Terminal, done <-chan struct{}) {
	if t == nil || t.Resize == nil {
		return
	}
	go func() {
		for {
			select {
			case size := <-t.Resize:
				if size.Validate() != nil {
					continue
				}
				if fw.WriteFrame(initproto.TypeResize, initproto.EncodeResize(size)) != nil {
					return
				}
			case <-done:
				return
			}
		}
	}()
}
