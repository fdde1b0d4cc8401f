package openapitest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/textclip"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Request is what CheckRequest saw of a request: the operation it is for
// (nil when the description has none) and whether the description accepts it.
type Request struct {
	Method, Path string
	Op           *Operation
	// Invalid says why the description refuses the request ("" when it
	// accepts it). A refused request must be answered with a 4xx.
	Invalid string
}

// CheckRequest checks a request and its body against the description. It
// never fails: a request the description refuses is a fine thing for a test
// to send, as long as the server refuses it too (see CheckResponse).
func (s *Spec) CheckRequest(method, path string, h http.Header, body []byte) Request {
	return s.CheckRequestQuery(method, path, nil, h, body)
}

// CheckRequestQuery is CheckRequest for a request with a query: its
// parameters must be ones the operation declares, with values its schemas
// accept, and the path's {parameters} too.
func (s *Spec) CheckRequestQuery(method, path string, query url.Values, h http.Header, body []byte) Request {
	r := Request{Method: strings.ToUpper(method), Path: path}
	op, ok := s.Operation(method, path)
	if !ok {
		r.Invalid = "the description has no " + r.Method + " " + path
		return r
	}
	r.Op = op
	if err := op.checkParams(path, query); err != nil {
		r.Invalid = err.Error()
		return r
	}
	if err := op.checkRequest(h, body); err != nil {
		r.Invalid = err.Error()
	}
	return r
}

// checkParams checks the query and the path's parameters.
func (op *Operation) checkParams(path string, query url.Values) error {
	values, _ := pathParams(op.Path, path)
	for name := range query {
		if !slices.ContainsFunc(op.params, func(p param) bool { return p.in == "query" && p.name == name }) {
			return fmt.Errorf("query parameter %q is not one the operation takes", name)
		}
	}
	for _, p := range op.params {
		var v string
		var ok bool
		switch p.in {
		case "query":
			if vs := query[p.name]; len(vs) > 0 {
				if len(vs) > 1 {
					return fmt.Errorf("query parameter %q given %d times", p.name, len(vs))
				}
				v, ok = vs[0], true
			}
		case "path":
			v, ok = values[p.name]
		}
		if !ok {
			if p.required {
				return fmt.Errorf("%s parameter %q is missing", p.in, p.name)
			}
			continue
		}
		var inst any = v
		if p.typ == "integer" || p.typ == "number" || p.typ == "boolean" {
			var err error
			if inst, err = jsonschema.UnmarshalJSON(strings.NewReader(v)); err != nil {
				return fmt.Errorf("%s parameter %q: %q is not a %s", p.in, p.name, clip(v), p.typ)
			}
		}
		if err := p.schema.Validate(inst); err != nil {
			return fmt.Errorf("%s parameter %q: %v", p.in, p.name, err)
		}
	}
	return nil
}

func (op *Operation) checkRequest(h http.Header, body []byte) error {
	// An operation without security ignores an Authorization header.
	if auth := h.Get("Authorization"); auth != "" && op.Auth {
		scheme, tok, _ := strings.Cut(auth, " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return fmt.Errorf("the Authorization header %q is not a bearer token", clip(auth))
		}
	}
	ct := h.Get("Content-Type")
	if len(op.bodies) == 0 {
		if len(body) > 0 {
			return errors.New("a body, and the operation takes none")
		}
		return nil
	}
	if ct == "" {
		if op.bodyRequired {
			return errors.New("no Content-Type, and the operation requires a body")
		}
		return nil
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("Content-Type %q: %w", ct, err)
	}
	mt, ok := op.bodies[media]
	if !ok {
		return fmt.Errorf("Content-Type %s is not one the operation takes", media)
	}
	switch {
	case media == "application/json" || strings.HasSuffix(media, "+json"):
		if err := validate(mt.schema, body); err != nil {
			return fmt.Errorf("body: %w", err)
		}
	case media == "application/x-tar":
		if spec := h.Get("X-Aster-Spec"); spec != "" && op.specHeader != nil {
			if err := validate(op.specHeader, []byte(spec)); err != nil {
				return fmt.Errorf("X-Aster-Spec: %w", err)
			}
		}
		if err := checkTar(body); err != nil {
			return err
		}
	case media == "multipart/form-data":
		return mt.checkMultipart(body, params["boundary"])
	}
	return nil
}

// checkTar reads an archive to its end.
func checkTar(b []byte) error {
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		_, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a tar archive: %w", err)
		}
	}
}

func (mt *mediaType) checkMultipart(body []byte, boundary string) error {
	if boundary == "" {
		return errors.New("multipart body without a boundary")
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	obj := map[string]any{}
	var order []string
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("multipart: %w", err)
		}
		name := part.FormName()
		data, err := io.ReadAll(part)
		if err != nil {
			return fmt.Errorf("multipart part %q: %w", name, err)
		}
		if _, dup := obj[name]; dup {
			return fmt.Errorf("multipart part %q twice", name)
		}
		order = append(order, name)
		switch {
		case mt.jsonParts[name]:
			v, err := decodeJSON(data)
			if err != nil {
				return fmt.Errorf("multipart part %q is not JSON: %w", name, err)
			}
			obj[name] = v
		default:
			if err := checkTar(data); err != nil {
				return fmt.Errorf("multipart part %q: %w", name, err)
			}
			obj[name] = "" // a binary part: its schema is a string
		}
	}
	if err := inOrder(order, mt.partOrder); err != nil {
		return err
	}
	if mt.schema != nil {
		if err := mt.schema.Validate(obj); err != nil {
			return fmt.Errorf("multipart: %w", err)
		}
	}
	return nil
}

// inOrder checks that the parts named in want come in want's order.
func inOrder(got, want []string) error {
	last := -1
	for _, name := range got {
		i := slices.Index(want, name)
		if i < 0 {
			continue
		}
		if i < last {
			return fmt.Errorf("multipart part %q comes after %q; the description wants %s", name, want[last], strings.Join(want, ", "))
		}
		last = i
	}
	return nil
}

// CheckResponse checks a response to req: a declared status (a 4xx when the
// description refuses the request), its required headers, its content type
// and its body. body is the whole body; HEAD answers have none.
func (s *Spec) CheckResponse(req Request, status int, h http.Header, body []byte) error {
	resp, err := s.response(req, status, h)
	if err != nil {
		return err
	}
	mt, media, err := resp.mediaType(req, h, len(body))
	if err != nil || mt == nil {
		return err
	}
	if mt.stream {
		st := newStreamCheck(mt)
		for line := range bytes.Lines(body) {
			if err := st.line(line); err != nil {
				return err
			}
		}
		return st.end()
	}
	if strings.HasPrefix(media, "text/") || media == "application/octet-stream" {
		return nil // bytes: no schema to hold them to
	}
	if media == "application/x-tar" {
		if err := checkTar(body); err != nil {
			return fmt.Errorf("%s %s → %d: %w", req.Method, req.Path, status, err)
		}
		return nil
	}
	if err := validate(mt.schema, body); err != nil {
		return fmt.Errorf("%s %s → %d: body %s: %w", req.Method, req.Path, status, clip(string(body)), err)
	}
	return nil
}

// response finds the declared response and checks the status and headers.
func (s *Spec) response(req Request, status int, h http.Header) (*Response, error) {
	where := fmt.Sprintf("%s %s → %d", req.Method, req.Path, status)
	var resp *Response
	switch {
	case req.Op != nil:
		resp = req.Op.responses[status]
		if resp == nil {
			return nil, fmt.Errorf("%s: the description declares no %d for this operation", where, status)
		}
		if req.Invalid != "" && (status < 400 || status >= 500) {
			return nil, fmt.Errorf("%s: the server accepted a request the description refuses (%s)", where, req.Invalid)
		}
	case s.paths[req.Path] != nil:
		resp = s.methodNotAllowed
		if status != resp.Status {
			return nil, fmt.Errorf("%s: a method the description does not declare for the path must get 405", where)
		}
		var allow []string
		for _, m := range strings.Split(h.Get("Allow"), ",") {
			allow = append(allow, strings.ToUpper(strings.TrimSpace(m)))
		}
		slices.Sort(allow)
		if want := s.Paths()[req.Path]; !slices.Equal(allow, want) {
			return nil, fmt.Errorf("%s: Allow %q, the description has %s", where, h.Get("Allow"), strings.Join(want, ", "))
		}
	default:
		resp = s.notFound
		if status != resp.Status {
			return nil, fmt.Errorf("%s: a path the description does not have must get 404", where)
		}
	}
	for name, hd := range resp.headers {
		v := h.Get(name)
		if v == "" {
			if hd.required {
				return nil, fmt.Errorf("%s: no %s header", where, name)
			}
			continue
		}
		if err := checkHeader(hd, v); err != nil {
			return nil, fmt.Errorf("%s: header %s %q: %w", where, name, v, err)
		}
	}
	return resp, nil
}

func checkHeader(hd header, v string) error {
	if hd.schema == nil {
		return nil
	}
	var val any = v
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		// Integer headers (Retry-After) are checked as numbers; a string
		// schema refuses them, so try both.
		if hd.schema.Validate(json.Number(strconv.FormatInt(n, 10))) == nil {
			return nil
		}
	}
	return hd.schema.Validate(val)
}

// mediaType checks the content type of a response and returns its declared
// media type (nil when there is no body to check).
func (r *Response) mediaType(req Request, h http.Header, n int) (*mediaType, string, error) {
	where := fmt.Sprintf("%s %s → %d", req.Method, req.Path, r.Status)
	ct := h.Get("Content-Type")
	if len(r.content) == 0 {
		if n > 0 {
			return nil, "", fmt.Errorf("%s: a body, and the description declares none", where)
		}
		return nil, "", nil
	}
	if req.Method == http.MethodHead {
		return nil, "", nil
	}
	media, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, "", fmt.Errorf("%s: Content-Type %q: %w", where, ct, err)
	}
	mt, ok := r.content[media]
	if !ok {
		return nil, "", fmt.Errorf("%s: Content-Type %s is not declared", where, media)
	}
	return mt, media, nil
}

// streamCheck checks an NDJSON event stream line by line: each line against
// the schema, output events first, at most one error event just before the
// result, and the result last.
type streamCheck struct {
	mt     *mediaType
	n      int
	last   string // the type of the previous event
	result bool
}

func newStreamCheck(mt *mediaType) *streamCheck { return &streamCheck{mt: mt} }

func (st *streamCheck) line(b []byte) error {
	st.n++
	b = bytes.TrimRight(b, "\n")
	if st.result {
		return fmt.Errorf("stream line %d after the result event: %s", st.n, clip(string(b)))
	}
	if err := validate(st.mt.schema, b); err != nil {
		return fmt.Errorf("stream line %d %s: %w", st.n, clip(string(b)), err)
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &head)
	if st.last == "error" && head.Type != "result" {
		return fmt.Errorf("stream line %d: a %q event after the error event (only the result may follow it)", st.n, head.Type)
	}
	st.last = head.Type
	st.result = head.Type == "result"
	return nil
}

func (st *streamCheck) end() error {
	if !st.result {
		return fmt.Errorf("the stream ended after %d lines without a result event", st.n)
	}
	return nil
}

// streamReader checks a stream as the test reads it, so a test that times
// the events sees them when the server sends them.
type streamReader struct {
	r      io.ReadCloser
	check  *streamCheck
	buf    []byte
	where  string
	report func(error)
	done   bool
}

func (sr *streamReader) Read(p []byte) (int, error) {
	n, err := sr.r.Read(p)
	sr.buf = append(sr.buf, p[:n]...)
	for !sr.done {
		i := bytes.IndexByte(sr.buf, '\n')
		if i < 0 {
			break
		}
		if cerr := sr.check.line(sr.buf[:i+1]); cerr != nil {
			sr.fail(cerr)
		}
		sr.buf = sr.buf[i+1:]
	}
	if errors.Is(err, io.EOF) && !sr.done {
		if len(sr.buf) > 0 {
			sr.fail(fmt.Errorf("the stream ends inside a line: %s", clip(string(sr.buf))))
		} else if cerr := sr.check.end(); cerr != nil {
			sr.fail(cerr)
		}
		sr.done = true
	}
	return n, err
}

func (sr *streamReader) fail(err error) {
	sr.done = true
	sr.report(fmt.Errorf("%s: %w", sr.where, err))
}

func (sr *streamReader) Close() error { return sr.r.Close() }

// clip keeps an error's quote of a body short.
func clip(s string) string { return textclip.Head(s, 300, "...") }
