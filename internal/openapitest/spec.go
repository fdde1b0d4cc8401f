// Package openapitest checks HTTP exchanges with the sandbox API against its
// OpenAPI description (package api/openapi): the request's body and spec
// header against the operation's schemas, and the response's status, headers,
// content type and body (every line of an NDJSON stream, and the order of the
// events) against what the description declares. Tests wrap their HTTP
// client's transport with Transport so that every call they make is checked.
package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/asterhq/aster/api/openapi"
)

// docURL names the description inside the schema compiler.
const docURL = "https://openapi.aster.test/openapi.json"

// Spec is the compiled description.
type Spec struct {
	// Doc is the decoded document.
	Doc   map[string]any
	paths map[string]map[string]*Operation // path → method → operation
	// notFound and methodNotAllowed are the answers to what the
	// description does not describe.
	notFound, methodNotAllowed *Response
}

// Operation is one method of one path.
type Operation struct {
	Method, Path string
	// Auth: the operation accepts the bearer token (its security names
	// bearerAuth).
	Auth         bool
	bodyRequired bool
	bodies       map[string]*mediaType // by media type
	specHeader   *jsonschema.Schema    // X-Aster-Spec, when declared
	params       []param               // query and path parameters
	responses    map[int]*Response
}

// param is one query or path parameter.
type param struct {
	name, in string
	required bool
	schema   *jsonschema.Schema
	typ      string // the schema's "type": how a value's text is read
}

// Response is one declared response.
type Response struct {
	Status  int
	headers map[string]header
	content map[string]*mediaType
}

type header struct {
	required bool
	schema   *jsonschema.Schema
}

type mediaType struct {
	schema    *jsonschema.Schema // nil: any
	stream    bool               // x-aster-stream: ndjson, one value a line
	jsonParts map[string]bool    // multipart parts whose content is JSON
	partOrder []string           // x-aster-part-order
}

var load = sync.OnceValues(func() (*Spec, error) { return Parse(openapi.JSON()) })

// Load returns the description embedded in package api/openapi, compiled
// once per process.
func Load() (*Spec, error) { return load() }

// Parse compiles a description.
func Parse(doc []byte) (*Spec, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("openapi: the document is not an object")
	}
	if ver, _ := root["openapi"].(string); !strings.HasPrefix(ver, "3.1.") {
		return nil, fmt.Errorf("openapi: version %q, want 3.1.x", ver)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020) // the dialect of OpenAPI 3.1
	if err := c.AddResource(docURL, root); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	p := &parser{c: c, root: root}
	s := &Spec{Doc: root, paths: map[string]map[string]*Operation{}}
	paths, _ := root["paths"].(map[string]any)
	for path, raw := range paths {
		item, _ := raw.(map[string]any)
		s.paths[path] = map[string]*Operation{}
		for m, rawOp := range item {
			method := strings.ToUpper(m)
			switch method {
			case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
			default:
				continue
			}
			op, err := p.operation(path, m, rawOp)
			if err != nil {
				return nil, err
			}
			s.paths[path][method] = op
		}
	}
	if s.notFound, err = p.response(0, "#/components/responses/NotFound"); err != nil {
		return nil, err
	}
	if s.methodNotAllowed, err = p.response(http.StatusMethodNotAllowed, "#/components/responses/MethodNotAllowed"); err != nil {
		return nil, err
	}
	s.notFound.Status = http.StatusNotFound
	return s, p.err
}

// Paths returns every described path with its methods, sorted.
func (s *Spec) Paths() map[string][]string {
	out := map[string][]string{}
	for path, ops := range s.paths {
		for m := range ops {
			out[path] = append(out[path], m)
		}
		slices.Sort(out[path])
	}
	return out
}

// Operation returns the operation of method and path: the path as
// described, or a path that fills a described template's {parameters}.
func (s *Spec) Operation(method, path string) (*Operation, bool) {
	if op, ok := s.paths[path][strings.ToUpper(method)]; ok {
		return op, true
	}
	for tmpl, ops := range s.paths {
		if _, ok := pathParams(tmpl, path); ok {
			if op, ok := ops[strings.ToUpper(method)]; ok {
				return op, true
			}
		}
	}
	return nil, false
}

// pathParams matches path against a template such as /v1/runs/{id}: the
// value of each {parameter}, and whether it matched (a template without
// parameters matches nothing here). A last {path} parameter takes the rest
// of the path, slashes included (/v1/sessions/{id}/files/{path}).
func pathParams(tmpl, path string) (map[string]string, bool) {
	if !strings.Contains(tmpl, "{") {
		return nil, false
	}
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	out := map[string]string{}
	for i, t := range ts {
		if i >= len(ps) {
			return nil, false
		}
		param := strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}")
		switch {
		case param && i == len(ts)-1 && t == "{path}":
			// A last {path} takes the rest of the path, slashes included.
			rest := strings.Join(ps[i:], "/")
			if rest == "" {
				return nil, false
			}
			out["path"] = rest
			return out, true
		case param:
			if ps[i] == "" {
				return nil, false
			}
			out[t[1:len(t)-1]] = ps[i]
		case t != ps[i]:
			return nil, false
		}
	}
	if len(ts) != len(ps) {
		return nil, false
	}
	return out, true
}

// parser compiles the parts of one document.
type parser struct {
	c    *jsonschema.Compiler
	root map[string]any
	err  error
}

// pointer escapes one JSON-pointer token.
func pointer(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// deref follows a local $ref of an object that is not a schema (a response,
// a parameter, a header), returning the object and its own location.
func (p *parser) deref(loc string, v any) (map[string]any, string) {
	for range 8 {
		m, _ := v.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, loc
		}
		loc = ref
		v = p.at(ref)
	}
	return nil, loc
}

// at resolves a local JSON pointer ("#/a/b") in the document.
func (p *parser) at(ref string) any {
	var v any = p.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	return v
}

func (p *parser) schema(loc string) *jsonschema.Schema {
	sch, err := p.c.Compile(docURL + loc)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("openapi: compile %s: %w", loc, err)
	}
	return sch
}

func (p *parser) operation(path, method string, raw any) (*Operation, error) {
	loc := "#/paths/" + pointer(path) + "/" + method
	m, _ := raw.(map[string]any)
	op := &Operation{Method: strings.ToUpper(method), Path: path, bodies: map[string]*mediaType{}, responses: map[int]*Response{}}
	sec, hasSec := m["security"].([]any)
	if !hasSec {
		sec, _ = p.root["security"].([]any)
	}
	for _, req := range sec {
		if r, _ := req.(map[string]any); r != nil {
			if _, ok := r["bearerAuth"]; ok {
				op.Auth = true
			}
		}
	}
	params, _ := m["parameters"].([]any)
	for i, raw := range params {
		prm, ploc := p.deref(fmt.Sprintf("%s/parameters/%d", loc, i), raw)
		switch in := prm["in"]; {
		case in == "header" && strings.EqualFold(fmt.Sprint(prm["name"]), "X-Aster-Spec"):
			op.specHeader = p.schema(ploc + "/content/application~1json/schema")
		case in == "query" || in == "path":
			sch, _ := prm["schema"].(map[string]any)
			typ, _ := sch["type"].(string)
			required, _ := prm["required"].(bool)
			if in == "path" && (!required || !strings.Contains(path, "{"+fmt.Sprint(prm["name"])+"}")) {
				return nil, fmt.Errorf("openapi: %s: path parameter %v must be required and in the path", loc, prm["name"])
			}
			op.params = append(op.params, param{name: fmt.Sprint(prm["name"]), in: in.(string), required: required,
				schema: p.schema(ploc + "/schema"), typ: typ})
		default:
			return nil, fmt.Errorf("openapi: %s: parameter %v in %v is not checked by openapitest", loc, prm["name"], prm["in"])
		}
	}
	if rb, ok := m["requestBody"]; ok {
		body, bloc := p.deref(loc+"/requestBody", rb)
		op.bodyRequired, _ = body["required"].(bool)
		content, _ := body["content"].(map[string]any)
		for media, rawMT := range content {
			op.bodies[media] = p.mediaType(bloc+"/content/"+pointer(media), rawMT)
		}
	}
	responses, _ := m["responses"].(map[string]any)
	for code, raw := range responses {
		status, err := strconv.Atoi(code)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: response %q: openapitest checks only exact statuses", loc, code)
		}
		_, rloc := p.deref(loc+"/responses/"+code, raw)
		r, err := p.response(status, rloc)
		if err != nil {
			return nil, err
		}
		op.responses[status] = r
	}
	return op, nil
}

func (p *parser) response(status int, loc string) (*Response, error) {
	m, loc := p.deref(loc, p.at(loc))
	if m == nil {
		return nil, fmt.Errorf("openapi: no response at %s", loc)
	}
	r := &Response{Status: status, headers: map[string]header{}, content: map[string]*mediaType{}}
	headers, _ := m["headers"].(map[string]any)
	for name, raw := range headers {
		h, hloc := p.deref(loc+"/headers/"+pointer(name), raw)
		req, _ := h["required"].(bool)
		r.headers[name] = header{required: req, schema: p.schema(hloc + "/schema")}
	}
	content, _ := m["content"].(map[string]any)
	for media, raw := range content {
		r.content[media] = p.mediaType(loc+"/content/"+pointer(media), raw)
	}
	return r, nil
}

func (p *parser) mediaType(loc string, raw any) *mediaType {
	m, _ := raw.(map[string]any)
	mt := &mediaType{jsonParts: map[string]bool{}}
	if _, ok := m["schema"]; ok {
		mt.schema = p.schema(loc + "/schema")
	}
	mt.stream = m["x-aster-stream"] == "ndjson"
	if order, ok := m["x-aster-part-order"].([]any); ok {
		for _, o := range order {
			mt.partOrder = append(mt.partOrder, fmt.Sprint(o))
		}
	}
	enc, _ := m["encoding"].(map[string]any)
	for part, raw := range enc {
		e, _ := raw.(map[string]any)
		if ct, _ := e["contentType"].(string); strings.HasPrefix(ct, "application/json") {
			mt.jsonParts[part] = true
		}
	}
	return mt
}

// decodeJSON decodes exactly one JSON value, numbers kept exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// validate checks one JSON document against sch.
func validate(sch *jsonschema.Schema, b []byte) error {
	v, err := decodeJSON(b)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if sch == nil {
		return nil
	}
	return sch.Validate(v)
}
