package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/initproto"
)

// The CONNECT proxy init serves on loopback when a run has egress. It decides
// nothing: each CONNECT becomes a tunnel-open frame, and the host's relay
// checks the name against the operator's list, resolves it and dials. There is
// no DNS in the sandbox and no network device but lo.
const (
	// maxRequestBytes caps a CONNECT request line and its headers.
	maxRequestBytes = 8 << 10
	// maxRequestLines caps its header lines.
	maxRequestLines = 64
	// requestTimeout bounds how long a client may take to send its request.
	requestTimeout = 10 * time.Second
	// answerTimeout bounds the wait for the host's answer to an open (the
	// host's own connect timeout is shorter).
	answerTimeout = 60 * time.Second
)

type egressProxy struct {
	ln    net.Listener
	out   *initproto.Writer
	mux   *initproto.Mux
	slots chan struct{} // one per connection being served
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu      sync.Mutex
	nextID  uint32
	pending map[uint32]*pendingOpen
}

type pendingOpen struct {
	conn   initproto.Conn
	answer chan initproto.TunnelAnswer // buffered 1
	tunnel *initproto.Tunnel           // set with an AnswerOpen
}

// startEgressProxy listens on 127.0.0.1:port. It is called before the job is
// started, so the job cannot take the port first.
func startEgressProxy(port int, out *initproto.Writer) (*egressProxy, error) {
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w (the sandbox's loopback interface must be up)", err)
	}
	p := &egressProxy{
		ln: ln, out: out, mux: initproto.NewMux(out),
		slots: make(chan struct{}, initproto.MaxTunnels), done: make(chan struct{}),
		pending: make(map[uint32]*pendingOpen),
	}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *egressProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and the like: the job exhausted something; back off.
			select {
			case <-p.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		select {
		case p.slots <- struct{}{}:
		default:
			// A short answer into a fresh socket's empty buffer: it does not
			// block, so a flood of connections costs no goroutines.
			refuse(c, 503, "Service Unavailable", fmt.Sprintf("too many tunnels: at most %d at once", initproto.MaxTunnels))
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.slots }()
			p.handle(c.(*net.TCPConn))
		}()
	}
}

// handle serves one client connection: a CONNECT request, the host's answer,
// then the tunnel until it ends.
func (p *egressProxy) handle(c *net.TCPConn) {
	_ = c.SetDeadline(time.Now().Add(requestTimeout))
	br := bufio.NewReaderSize(c, maxRequestBytes)
	host, port, status, err := readConnect(br)
	if err != nil {
		refuse(c, status, statusText(status), err.Error())
		return
	}
	var conn initproto.Conn = c
	if n := br.Buffered(); n > 0 {
		// The client sent its first bytes (a TLS hello) without waiting.
		early, _ := br.Peek(n)
		conn = &prefixConn{TCPConn: c, r: io.MultiReader(bytes.NewReader(bytes.Clone(early)), c)}
	}
	_ = c.SetDeadline(time.Time{})
	po := &pendingOpen{conn: conn, answer: make(chan initproto.TunnelAnswer, 1)}
	// The host requires increasing ids: allocate and send under one lock.
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.pending[id] = po
	err = p.out.WriteFrame(initproto.TypeTunnelOpen, initproto.EncodeTunnelOpen(initproto.TunnelOpen{ID: id, Port: uint16(port), Host: host}))
	p.mu.Unlock()
	if err != nil {
		p.forget(id)
		refuse(c, 502, "Bad Gateway", "the host is gone")
		return
	}
	timer := time.NewTimer(answerTimeout)
	defer timer.Stop()
	var a initproto.TunnelAnswer
	select {
	case a = <-po.answer:
	case <-timer.C:
		if p.forget(id) {
			_ = p.out.WriteFrame(initproto.TypeTunnelClose, initproto.EncodeTunnelClose(id, initproto.CloseAbort))
			refuse(c, 504, "Gateway Timeout", "the relay did not answer in time")
			return
		}
		a = <-po.answer // the answer came meanwhile
	case <-p.done:
		p.forget(id)
		c.Close()
		return
	}
	switch a.Status {
	case initproto.AnswerOpen:
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			po.tunnel.Start() // starts, sees the closed conn, aborts
			p.mux.Abort(id)
			<-po.tunnel.Done()
			return
		}
		po.tunnel.Start()
		<-po.tunnel.Done()
	case initproto.AnswerFailed:
		refuse(c, 502, "Bad Gateway", a.Reason)
	default:
		refuse(c, 403, "Forbidden", a.Reason)
	}
}

// forget drops a pending open; it says whether it was still pending.
func (p *egressProxy) forget(id uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.pending[id]
	delete(p.pending, id)
	return ok
}

// answer takes the host's answer to an open, from the frame loop. An open
// tunnel is registered with the mux here, before the next frame is read, so
// that data the host sends right after its answer is queued, not dropped.
func (p *egressProxy) answer(payload []byte) {
	a, err := initproto.DecodeTunnelAnswer(payload)
	if err != nil {
		return
	}
	p.mu.Lock()
	po, ok := p.pending[a.ID]
	delete(p.pending, a.ID)
	p.mu.Unlock()
	if !ok {
		// Given up on (timeout) or never asked for: the host must not keep it.
		if a.Status == initproto.AnswerOpen {
			_ = p.out.WriteFrame(initproto.TypeTunnelClose, initproto.EncodeTunnelClose(a.ID, initproto.CloseAbort))
		}
		return
	}
	if a.Status == initproto.AnswerOpen {
		t, err := p.mux.Add(a.ID, po.conn)
		if err != nil {
			_ = p.out.WriteFrame(initproto.TypeTunnelClose, initproto.EncodeTunnelClose(a.ID, initproto.CloseAbort))
			a = initproto.TunnelAnswer{ID: a.ID, Status: initproto.AnswerFailed, Reason: "the run is ending"}
		}
		po.tunnel = t
	}
	po.answer <- a
}

// close ends the proxy: no new connection, every tunnel aborted. It is called
// once the job has exited, so nothing is left to serve.
func (p *egressProxy) close() {
	p.once.Do(func() {
		close(p.done)
		p.ln.Close()
		p.mux.Close()
		done := make(chan struct{})
		go func() { p.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			logf("egress proxy: connections still open 2s after the job ended")
		}
	})
}

// prefixConn replays bytes the request reader took past the request.
type prefixConn struct {
	*net.TCPConn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// readConnect reads one proxy request. Anything but a well-formed CONNECT is
// an error with the HTTP status to answer.
func readConnect(br *bufio.Reader) (host string, port, status int, err error) {
	total := 0
	line := func() (string, error) {
		b, err := br.ReadSlice('\n')
		total += len(b)
		if errors.Is(err, bufio.ErrBufferFull) || total > maxRequestBytes {
			return "", errTooLarge
		}
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	first, err := line()
	if err != nil {
		return requestError(err)
	}
	method, rest, ok1 := strings.Cut(first, " ")
	target, version, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || (version != "HTTP/1.1" && version != "HTTP/1.0") || target == "" {
		return "", 0, 400, errors.New("malformed proxy request")
	}
	if method != "CONNECT" {
		return "", 0, 405, errors.New("only HTTPS through CONNECT is relayed: plain HTTP requests (GET http://...) are refused")
	}
	h, ps, err := net.SplitHostPort(target)
	if err != nil || h == "" {
		return "", 0, 400, errors.New("CONNECT target must be host:port")
	}
	pn, err := strconv.Atoi(ps)
	if err != nil || pn < 1 || pn > 65535 || ps[0] == '+' || ps[0] == '-' {
		return "", 0, 400, errors.New("CONNECT target has a bad port")
	}
	if strings.Contains(target, "[") {
		h = "[" + h + "]" // keep an IPv6 literal recognisable: the host refuses it by name
	}
	if len(h) > initproto.MaxHostName {
		return "", 0, 400, errors.New("CONNECT host name too long")
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c >= 0x7f {
			return "", 0, 400, errors.New("CONNECT host name has a control or non-ASCII byte")
		}
	}
	for n := 0; ; n++ {
		l, err := line()
		if err != nil {
			return requestError(err)
		}
		if l == "" {
			return h, pn, 0, nil
		}
		if n >= maxRequestLines {
			return "", 0, 431, errTooLarge
		}
	}
}

var errTooLarge = errors.New("proxy request too large")

func requestError(err error) (string, int, int, error) {
	if errors.Is(err, errTooLarge) {
		return "", 0, 431, err
	}
	return "", 0, 400, fmt.Errorf("reading the proxy request: %v", err)
}

func statusText(code int) string {
	switch code {
	case 400:
		return "Bad Request"
	case 405:
		return "Method Not Allowed"
	case 431:
		return "Request Header Fields Too Large"
	}
	return "Error"
}

// refuse answers a proxy request with an error status and a one-line reason,
// then closes the connection.
func refuse(c net.Conn, code int, text, reason string) {
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	body := "aster egress: " + reason + "\n"
	allow := ""
	if code == 405 {
		allow = "Allow: CONNECT\r\n"
	}
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, text, allow, len(body), body)
}
