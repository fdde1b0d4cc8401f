package initproto

import (
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestTunnelFramesRoundTrip(t *testing.T) {
	o := TunnelOpen{ID: 7, Port: 443, Host: "registry.example"}
	if got, err := DecodeTunnelOpen(EncodeTunnelOpen(o)); err != nil || got != o {
		t.Fatalf("open: %+v %v", got, err)
	}
	a := TunnelAnswer{ID: 7, Status: AnswerRefused, Reason: "not on the list\n" + strings.Repeat("é", 400)}
	got, err := DecodeTunnelAnswer(EncodeTunnelAnswer(a))
	if err != nil || got.ID != 7 || got.Status != AnswerRefused || len(got.Reason) > MaxTunnelReason || !utf8.ValidString(got.Reason) || strings.ContainsAny(got.Reason, "\n") {
		t.Fatalf("answer: %+v %v", got, err)
	}
	if id, data, err := DecodeTunnelData(EncodeTunnelData(3, []byte("xyz"))); err != nil || id != 3 || string(data) != "xyz" {
		t.Fatalf("data: %d %q %v", id, data, err)
	}
	if id, n, err := DecodeTunnelGrant(EncodeTunnelGrant(3, 100)); err != nil || id != 3 || n != 100 {
		t.Fatalf("grant: %d %d %v", id, n, err)
	}
	if id, how, err := DecodeTunnelClose(EncodeTunnelClose(3, CloseWrite)); err != nil || id != 3 || how != CloseWrite {
		t.Fatalf("close: %d %d %v", id, how, err)
	}
	for name, bad := range map[string]func() error{
		"open id 0":    func() error { _, err := DecodeTunnelOpen(EncodeTunnelOpen(TunnelOpen{Port: 1, Host: "a"})); return err },
		"open port 0":  func() error { _, err := DecodeTunnelOpen(EncodeTunnelOpen(TunnelOpen{ID: 1, Host: "a"})); return err },
		"open no host": func() error { _, err := DecodeTunnelOpen(EncodeTunnelOpen(TunnelOpen{ID: 1, Port: 1})); return err },
		"open long host": func() error {
			_, err := DecodeTunnelOpen(EncodeTunnelOpen(TunnelOpen{ID: 1, Port: 1, Host: strings.Repeat("a", 300)}))
			return err
		},
		"open ctl host": func() error {
			_, err := DecodeTunnelOpen(EncodeTunnelOpen(TunnelOpen{ID: 1, Port: 1, Host: "a\r\nb"}))
			return err
		},
		"answer status": func() error { _, err := DecodeTunnelAnswer([]byte{0, 0, 0, 1, 9}); return err },
		"data empty":    func() error { _, _, err := DecodeTunnelData(EncodeTunnelData(1, nil)); return err },
		"data big": func() error {
			_, _, err := DecodeTunnelData(EncodeTunnelData(1, make([]byte, MaxTunnelChunk+1)))
			return err
		},
		"grant big": func() error { _, _, err := DecodeTunnelGrant(EncodeTunnelGrant(1, TunnelWindow+1)); return err },
		"grant 0":   func() error { _, _, err := DecodeTunnelGrant(EncodeTunnelGrant(1, 0)); return err },
		"close how": func() error { _, _, err := DecodeTunnelClose(EncodeTunnelClose(1, 5)); return err },
	} {
		if bad() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); ch <- c }()
	a, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-ch
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// link is two Muxes joined by a frame stream each way, each with a loop
// feeding the other side's frames to it, like the host and init.
type link struct {
	a, b *Mux
}

func newLink(t *testing.T) *link {
	t.Helper()
	abR, abW := io.Pipe()
	baR, baW := io.Pipe()
	l := &link{a: NewMux(NewWriter(abW)), b: NewMux(NewWriter(baW))}
	var wg sync.WaitGroup
	pump := func(r io.Reader, m *Mux) {
		defer wg.Done()
		fr := NewReader(r)
		for {
			f, err := fr.Next()
			if err != nil {
				return
			}
			if err := m.Handle(f); err != nil {
				panic(err) // the Muxes under test wrote a malformed frame
			}
		}
	}
	wg.Add(2)
	go pump(abR, l.b)
	go pump(baR, l.a)
	t.Cleanup(func() {
		l.a.Close()
		l.b.Close()
		abW.Close()
		baW.Close()
		wg.Wait()
	})
	return l
}

// tunnel joins client (far end of a's conn) and server (far end of b's conn)
// through tunnel id.
func (l *link) tunnel(t *testing.T, id uint32) (client, server *net.TCPConn) {
	t.Helper()
	ca, cb := tcpPair(t)
	sa, sb := tcpPair(t)
	ta, err := l.a.Add(id, cb)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := l.b.Add(id, sa)
	if err != nil {
		t.Fatal(err)
	}
	ta.Start()
	tb.Start()
	return ca, sb
}

func TestMuxRelaysBothWaysWithHalfClose(t *testing.T) {
	l := newLink(t)
	client, server := l.tunnel(t, 1)
	big := bytes.Repeat([]byte("0123456789"), 100_000) // far past one window
	go func() {
		client.Write(big)
		client.CloseWrite()
	}()
	got, err := io.ReadAll(server)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("server read %d bytes (%v), want %d", len(got), err, len(big))
	}
	// The other direction still works after the client's half-close.
	if _, err := server.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	server.CloseWrite()
	back, err := io.ReadAll(client)
	if err != nil || string(back) != "reply" {
		t.Fatalf("client read %q %v", back, err)
	}
}

// A tunnel whose reader never reads holds at most its window, and another
// tunnel keeps flowing meanwhile.
func TestMuxSlowTunnelDoesNotStallOthers(t *testing.T) {
	l := newLink(t)
	stuckClient, _ := l.tunnel(t, 1) // its server end is never read
	go stuckClient.Write(make([]byte, 16<<20))
	client, server := l.tunnel(t, 2)
	msg := bytes.Repeat([]byte("z"), 1<<20)
	go func() { client.Write(msg); client.CloseWrite() }()
	got, err := io.ReadAll(server)
	if err != nil || len(got) != len(msg) {
		t.Fatalf("second tunnel: %d bytes, %v", len(got), err)
	}
	tb := l.b.get(1)
	tb.mu.Lock()
	queued := tb.queued
	tb.mu.Unlock()
	if queued > TunnelWindow {
		t.Fatalf("stuck tunnel holds %d bytes, over the window %d", queued, TunnelWindow)
	}
}

// A peer that sends past its credit loses that tunnel, not the stream.
func TestMuxAbortsOnCreditViolation(t *testing.T) {
	var out bytes.Buffer
	m := NewMux(NewWriter(&out))
	_, c := tcpPair(t)
	tun, err := m.Add(5, c)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, MaxTunnelChunk)
	for range TunnelWindow/MaxTunnelChunk + 1 {
		if err := m.Handle(Frame{Type: TypeTunnelData, Payload: EncodeTunnelData(5, chunk)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-tun.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("tunnel not aborted")
	}
	if m.Len() != 0 {
		t.Fatalf("%d tunnels left", m.Len())
	}
	r := NewReader(&out)
	f, err := r.Next()
	if err != nil || f.Type != TypeTunnelClose {
		t.Fatalf("frame %v %v, want an abort", f.Type, err)
	}
	if id, how, _ := DecodeTunnelClose(f.Payload); id != 5 || how != CloseAbort {
		t.Fatalf("close %d %d", id, how)
	}
	// Frames for the gone tunnel are dropped.
	if err := m.Handle(Frame{Type: TypeTunnelData, Payload: EncodeTunnelData(5, []byte("x"))}); err != nil {
		t.Fatal(err)
	}
}

// FuzzTunnelFrames: the decoders never panic and what they accept is in bounds.
func FuzzTunnelFrames(f *testing.F) {
	f.Add(byte(TypeTunnelOpen), EncodeTunnelOpen(TunnelOpen{ID: 1, Port: 443, Host: "a.example"}))
	f.Add(byte(TypeTunnelAnswer), EncodeTunnelAnswer(TunnelAnswer{ID: 1, Status: AnswerOpen}))
	f.Add(byte(TypeTunnelData), EncodeTunnelData(1, []byte("x")))
	f.Add(byte(TypeTunnelGrant), EncodeTunnelGrant(1, 10))
	f.Add(byte(TypeTunnelClose), EncodeTunnelClose(1, CloseAbort))
	f.Add(byte(TypeExportEnd), []byte(`{"files":1,"bytes":2}`))
	f.Fuzz(func(t *testing.T, typ byte, p []byte) {
		switch Type(typ) {
		case TypeTunnelOpen:
			if o, err := DecodeTunnelOpen(p); err == nil && (o.ID == 0 || o.Port == 0 || o.Host == "" || len(o.Host) > MaxHostName+2) {
				t.Fatalf("accepted %+v", o)
			}
		case TypeTunnelAnswer:
			if a, err := DecodeTunnelAnswer(p); err == nil && (a.ID == 0 || a.Status > AnswerFailed || len(a.Reason) > 3*MaxTunnelReason) {
				t.Fatalf("accepted %+v", a)
			}
		case TypeExportEnd:
			if e, err := DecodeExportEnd(p); err == nil && (e.Files < 0 || e.Bytes < 0 || e.Skipped < 0 || len(e.Error) > MaxErrorText+4) {
				t.Fatalf("accepted %+v", e)
			}
		default:
			// Data, grant and close through a Mux with no tunnels: never a panic.
			var out bytes.Buffer
			_ = NewMux(NewWriter(&out)).Handle(Frame{Type: Type(typ), Payload: p})
			if _, d, err := DecodeTunnelData(p); err == nil && (len(d) == 0 || len(d) > MaxTunnelChunk) {
				t.Fatalf("data of %d bytes accepted", len(d))
			}
		}
	})
}
