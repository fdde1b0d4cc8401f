package openapitest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
)

// maxCheckedBody bounds the bodies a Transport holds to check them.
const maxCheckedBody = 256 << 20

// Transport returns a RoundTripper that sends through base (nil:
// http.DefaultTransport) and checks every request and response against the
// description, failing t on a mismatch. A request is buffered before it is
// sent (its length, known or not, is kept); a JSON response is checked when
// it has been read to its end (or when it is closed, which then reads the
// rest); an NDJSON stream is checked line by line as it is read, and its
// order at its end. A response cut short by the client is not judged.
func (s *Spec) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{spec: s, base: base, report: func(err error) { t.Errorf("openapi: %v", err) }}
}

// Client returns an *http.Client whose transport is s.Transport(t, nil).
func (s *Spec) Client(t testing.TB) *http.Client {
	return &http.Client{Transport: s.Transport(t, nil)}
}

type transport struct {
	spec   *Spec
	base   http.RoundTripper
	report func(error)
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(req.Body, maxCheckedBody+1))
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: read the request body: %w", err)
		}
		if len(b) > maxCheckedBody {
			return nil, errors.New("openapitest: request body too large to check")
		}
		body = b
		r2 := req.Clone(req.Context())
		r2.Body = io.NopCloser(bytes.NewReader(b))
		r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req = r2
	}
	checked := tr.spec.CheckRequestQuery(req.Method, req.URL.Path, req.URL.Query(), req.Header, body)
	resp, err := tr.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	where := fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, resp.StatusCode)
	rsp, err := tr.spec.response(checked, resp.StatusCode, resp.Header)
	if err != nil {
		tr.report(err)
		return resp, nil
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt := rsp.content[media]; mt != nil && mt.stream && req.Method != http.MethodHead {
		resp.Body = &streamReader{r: resp.Body, check: newStreamCheck(mt), where: where, report: tr.report}
		return resp, nil
	}
	resp.Body = &wholeReader{r: resp.Body, done: func(b []byte) {
		if err := tr.spec.CheckResponse(checked, resp.StatusCode, resp.Header, b); err != nil {
			tr.report(err)
		}
	}}
	return resp, nil
}

// wholeReader keeps what is read and hands it to done at EOF, or at Close
// after reading the rest.
type wholeReader struct {
	r    io.ReadCloser
	buf  bytes.Buffer
	done func([]byte)
	over bool // checked, or cut short
}

func (w *wholeReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if w.buf.Len() < maxCheckedBody {
		w.buf.Write(p[:n])
	}
	w.finish(err)
	return n, err
}

func (w *wholeReader) finish(err error) {
	if w.over || err == nil {
		return
	}
	w.over = true
	if errors.Is(err, io.EOF) && w.buf.Len() < maxCheckedBody {
		w.done(w.buf.Bytes())
	}
}

func (w *wholeReader) Close() error {
	if !w.over {
		_, err := io.Copy(&w.buf, io.LimitReader(w.r, maxCheckedBody))
		if err == nil {
			err = io.EOF
		}
		w.finish(err)
	}
	return w.r.Close()
}

// CheckExchange checks a request with its body and a response with its
// body, as a test that serves a handler directly (httptest.ResponseRecorder,
// a raw connection) sees them.
func (s *Spec) CheckExchange(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	checked := s.CheckRequestQuery(req.Method, req.URL.Path, req.URL.Query(), req.Header, reqBody)
	return s.CheckResponse(checked, resp.StatusCode, resp.Header, respBody)
}

// CheckAnswer checks a response to a request the test could not capture
// whole (one it wrote by hand, or cut short on purpose): only the response
// is judged, as the answer to some request of method on path.
func (s *Spec) CheckAnswer(method, path string, resp *http.Response, respBody []byte) error {
	req := Request{Method: strings.ToUpper(method), Path: path}
	req.Op, _ = s.Operation(method, path)
	return s.CheckResponse(req, resp.StatusCode, resp.Header, respBody)
}
