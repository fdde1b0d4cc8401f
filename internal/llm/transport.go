package llm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// errBodyTooLarge ends a read past the response cap.
var errBodyTooLarge = errors.New("response body larger than the cap")

// HTTPOptions shape the HTTP client a provider uses.
type HTTPOptions struct {
	// Client is used as is when set (tests); its transport is wrapped with the cap.
	Client *http.Client
	// MaxResponseBytes caps every response body (default DefaultMaxResponseBytes).
	MaxResponseBytes int64
}

// httpClient returns a client of its own (never http.DefaultClient) whose
// responses are capped: a model answer is untrusted input.
func (o HTTPOptions) httpClient() *http.Client {
	limit := o.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	var base http.RoundTripper
	c := &http.Client{}
	if o.Client != nil {
		*c = *o.Client
		base = o.Client.Transport
	}
	if base == nil {
		base = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	c.Transport = cappedTransport{next: base, limit: limit}
	return c
}

type cappedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(req)
	if err != nil || res.Body == nil {
		return res, err
	}
	if res.ContentLength > t.limit {
		_ = res.Body.Close()
		return nil, fmt.Errorf("%w (%d bytes announced, cap %d)", errBodyTooLarge, res.ContentLength, t.limit)
	}
	res.Body = &cappedBody{rc: res.Body, left: t.limit}
	return res, nil
}

// cappedBody fails the read that passes the cap instead of silently cutting,
// so a truncated JSON body is never mistaken for a whole one.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, errBodyTooLarge
	}
	if err != nil && err != io.EOF {
		// The connection failed mid-body: transient, unlike a body that
		// arrived whole and does not decode.
		err = &bodyReadError{err: err}
	}
	return n, err
}

type bodyReadError struct{ err error }

func (e *bodyReadError) Error() string { return "reading response body: " + e.err.Error() }
func (e *bodyReadError) Unwrap() error { return e.err }

func (b *cappedBody) Close() error { return b.rc.Close() }
