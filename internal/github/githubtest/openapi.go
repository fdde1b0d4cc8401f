package githubtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DataDirEnv overrides where the octokit npm packages are found (the directory holding
// @octokit/openapi and @octokit/webhooks-examples). By default the fake looks for
// third_party/octokit/node_modules/@octokit above the working directory, where
// scripts/fetch-test-deps.sh installs them.
const DataDirEnv = "ASTER_OCTOKIT_DIR"

// DataDir returns the directory holding the @octokit packages, or an error saying how to get them.
func DataDir() (string, error) {
	if d := os.Getenv(DataDirEnv); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(dir, "third_party", "octokit", "node_modules", "@octokit")
			if _, err := os.Stat(filepath.Join(d, "openapi", "package.json")); err != nil {
				return "", fmt.Errorf("octokit test data not installed in %s: run scripts/fetch-test-deps.sh", d)
			}
			return d, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above the working directory; set " + DataDirEnv)
		}
	}
}

// specFile is the description of api.github.com; the fake serves it under the GHES-style
// /api/v3/ prefix so a client that drops its base path fails.
const specFile = "openapi/generated/api.github.com.json"

// schemaDocURL names the description inside the schema compiler.
const schemaDocURL = "https://openapi.aster.test/api.github.com.json"

// Spec is GitHub's REST OpenAPI description, indexed for request matching and body validation.
// Load it with LoadSpec: it is read once per test process.
type Spec struct {
	Version  string // the description's info.version
	byMethod map[string][]*Operation

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	loose    *jsonschema.Compiler // no format assertions (ValidateWebhook)
	root     map[string]any
	schemas  map[string]*jsonschema.Schema // by name: request/ID, response/ID/STATUS
}

// Operation is one method+path of the description.
type Operation struct {
	ID       string // operationId, e.g. "pulls/create-review"
	Method   string
	Template string // e.g. /repos/{owner}/{repo}/pulls/{pull_number}
	segments []string
	literals int
	body     any  // the application/json request schema, nil when none
	bodyReq  bool // the request body is required
	// responses are the application/json response schemas, by status code.
	responses map[string]any
}

var loadSpec = sync.OnceValues(func() (*Spec, error) {
	dir, err := DataDir()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, specFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", specFile, err)
	}
	return newSpec(doc)
})

// LoadSpec returns the process-wide Spec, loading it on first use.
func LoadSpec() (*Spec, error) { return loadSpec() }

func newSpec(doc any) (*Spec, error) {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("openapi: not an object")
	}
	convertOpenAPISchemas(root)
	s := &Spec{byMethod: map[string][]*Operation{}, schemas: map[string]*jsonschema.Schema{}}
	if info, ok := root["info"].(map[string]any); ok {
		s.Version, _ = info["version"].(string)
	}
	paths, _ := root["paths"].(map[string]any)
	for tmpl, item := range paths {
		ops, _ := item.(map[string]any)
		for method, raw := range ops {
			op, ok := raw.(map[string]any)
			if !ok {
				continue
			}
			m := strings.ToUpper(method)
			switch m {
			case "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD":
			default:
				continue
			}
			o := &Operation{Method: m, Template: tmpl, segments: splitPath(tmpl)}
			o.ID, _ = op["operationId"].(string)
			for _, seg := range o.segments {
				if !isParam(seg) {
					o.literals++
				}
			}
			if rb, ok := op["requestBody"].(map[string]any); ok {
				o.bodyReq, _ = rb["required"].(bool)
				if content, ok := rb["content"].(map[string]any); ok {
					if js, ok := content["application/json"].(map[string]any); ok {
						o.body = js["schema"]
					}
				}
			}
			if rs, ok := op["responses"].(map[string]any); ok {
				for code, raw := range rs {
					r, _ := raw.(map[string]any)
					content, _ := r["content"].(map[string]any)
					if js, ok := content["application/json"].(map[string]any); ok && js["schema"] != nil {
						if o.responses == nil {
							o.responses = map[string]any{}
						}
						o.responses[code] = js["schema"]
					}
				}
			}
			s.byMethod[m] = append(s.byMethod[m], o)
		}
	}
	for _, ops := range s.byMethod {
		// Most literal segments first, so /pulls/comments beats /pulls/{pull_number}.
		slices.SortFunc(ops, func(a, b *Operation) int {
			if a.literals != b.literals {
				return b.literals - a.literals
			}
			return strings.Compare(a.Template, b.Template)
		})
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4) // OpenAPI 3.0 schemas are draft-4 shaped
	c.AssertFormat()
	if err := c.AddResource(schemaDocURL, root); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	s.compiler, s.root = c, root
	return s, nil
}

// convertOpenAPISchemas rewrites OpenAPI 3.0 dialect into plain JSON Schema in place:
// "nullable: true" becomes a null alternative, and local $refs become absolute so schemas
// compiled on their own still resolve them.
func convertOpenAPISchemas(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, child := range x {
			convertOpenAPISchemas(child)
		}
		if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
			x["$ref"] = schemaDocURL + ref
		}
		if nullable, _ := x["nullable"].(bool); nullable {
			delete(x, "nullable")
			switch t := x["type"].(type) {
			case string:
				x["type"] = []any{t, "null"}
				if enum, ok := x["enum"].([]any); ok && !slices.Contains(enum, any(nil)) {
					x["enum"] = append(enum, nil)
				}
			default:
				inner := map[string]any{}
				for k, val := range x {
					inner[k] = val
					delete(x, k)
				}
				x["anyOf"] = []any{inner, map[string]any{"type": "null"}}
			}
		}
	case []any:
		for _, child := range x {
			convertOpenAPISchemas(child)
		}
	}
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

func isParam(seg string) bool {
	return strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}")
}

// Match finds the operation for a method and a path relative to the API root (escaped, as on
// the wire). The last parameter of a template may span several segments (a file path, a ref),
// but only when no template matches segment for segment.
func (s *Spec) Match(method, escapedPath string) (*Operation, map[string]string, bool) {
	raw := splitPath(escapedPath)
	segs := make([]string, len(raw))
	for i, r := range raw {
		u, err := url.PathUnescape(r)
		if err != nil {
			return nil, nil, false
		}
		segs[i] = u
	}
	ops := s.byMethod[strings.ToUpper(method)]
	for _, greedy := range []bool{false, true} {
		for _, op := range ops {
			if params, ok := op.match(segs, greedy); ok {
				return op, params, true
			}
		}
	}
	return nil, nil, false
}

// greedyParams are the parameters GitHub lets contain slashes: file paths and git refs.
var greedyParams = map[string]bool{"{path}": true, "{ref}": true}

func (o *Operation) match(segs []string, greedy bool) (map[string]string, bool) {
	n := len(o.segments)
	if len(segs) != n && !(greedy && len(segs) > n && greedyParams[o.segments[n-1]]) {
		return nil, false
	}
	params := map[string]string{}
	for i, t := range o.segments {
		if i == n-1 && greedy {
			if !greedyParams[t] {
				return nil, false
			}
			params[strings.Trim(t, "{}")] = strings.Join(segs[i:], "/")
			return params, true
		}
		switch {
		case isParam(t):
			if segs[i] == "" {
				return nil, false
			}
			params[strings.Trim(t, "{}")] = segs[i]
		case t != segs[i]:
			return nil, false
		}
	}
	return params, true
}

// ValidateBody checks a request body against the operation's JSON request schema.
func (s *Spec) ValidateBody(op *Operation, body []byte) error {
	if op.body == nil {
		if len(strings.TrimSpace(string(body))) > 0 {
			return fmt.Errorf("%s %s takes no JSON body", op.Method, op.Template)
		}
		return nil
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		if op.bodyReq {
			return fmt.Errorf("%s %s needs a JSON body", op.Method, op.Template)
		}
		return nil
	}
	sch, err := s.schema(op)
	if err != nil {
		return err
	}
	return validateJSON(sch, body, "body", op.ID+" request")
}

// validateJSON checks that body (what it is: "body", "response") is JSON valid against sch,
// the schema named name.
func validateJSON(sch *jsonschema.Schema, body []byte, what, name string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(body)))
	if err != nil {
		return fmt.Errorf("%s is not JSON: %w", what, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s does not match the %s schema: %w", what, name, err)
	}
	return nil
}

// ValidateResponse checks a JSON response body the fake is about to send against the
// operation's response schema for status, so the fake answers as GitHub documents.
func (s *Spec) ValidateResponse(op *Operation, status int, body []byte) error {
	raw, ok := op.responses[fmt.Sprint(status)]
	if !ok {
		return fmt.Errorf("%s has no JSON response for status %d", op.ID, status)
	}
	sch, err := s.compile("response/"+url.PathEscape(op.ID)+"/"+fmt.Sprint(status), raw)
	if err != nil {
		return err
	}
	return validateJSON(sch, body, "response", fmt.Sprintf("%s %d", op.ID, status))
}

// ValidateWebhook checks the properties parts (e.g. "action", "thread", "sender") of a
// webhook payload against the description's schema of event and action
// (components/schemas/webhook-EVENT-ACTION), so a payload a test builds has, where Aster reads
// it, the shape GitHub documents. Each part must be present. Only parts are checked: GitHub's
// own example payloads fail the whole schema (a missing has_discussions, an empty homepage).
// RFC 6570 templates are taken as they are.
func (s *Spec) ValidateWebhook(event, action string, body []byte, parts ...string) error {
	name := "webhook-" + strings.ReplaceAll(event, "_", "-") + "-" + strings.ReplaceAll(action, "_", "-")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("payload is not a JSON object: %w", err)
	}
	for _, part := range parts {
		raw, ok := doc[part]
		if !ok {
			return fmt.Errorf("payload has no %q (%s)", part, name)
		}
		sch, err := s.compileIn(true, "webhook/"+name+"/"+part,
			map[string]any{"$ref": schemaDocURL + "#/components/schemas/" + name + "/properties/" + part})
		if err != nil {
			return err
		}
		if err := validateJSON(sch, raw, part, name+" "+part); err != nil {
			return err
		}
	}
	return nil
}

// looseCompiler is the compiler of webhook payloads' schemas, with RFC 6570 templates left
// unchecked: the validator's uri-template refuses their operators ({/sha}), which every
// GitHub payload carries in its *_url fields. The caller holds s.mu.
func (s *Spec) looseCompiler() (*jsonschema.Compiler, error) {
	if s.loose == nil {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft4)
		c.RegisterFormat(&jsonschema.Format{Name: "uri-template", Validate: func(any) error { return nil }})
		if err := c.AddResource(schemaDocURL, s.root); err != nil {
			return nil, fmt.Errorf("openapi: %w", err)
		}
		s.loose = c
	}
	return s.loose, nil
}

// schema compiles an operation's request schema once and caches it.
func (s *Spec) schema(op *Operation) (*jsonschema.Schema, error) {
	return s.compile("request/"+url.PathEscape(op.ID), op.body)
}

// compile compiles a schema of the description once, by name, and caches it.
func (s *Spec) compile(name string, raw any) (*jsonschema.Schema, error) {
	return s.compileIn(false, name, raw)
}

// compileIn is compile, with the webhook payloads' compiler when loose is set.
func (s *Spec) compileIn(loose bool, name string, raw any) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[name]; ok {
		return sch, nil
	}
	c := s.compiler
	if loose {
		var err error
		if c, err = s.looseCompiler(); err != nil {
			return nil, err
		}
	}
	loc := "https://openapi.aster.test/" + name + ".json"
	if err := c.AddResource(loc, raw); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile schema %s: %w", name, err)
	}
	s.schemas[name] = sch
	return sch, nil
}

// Operations returns how many operations the description has.
func (s *Spec) Operations() int {
	n := 0
	for _, ops := range s.byMethod {
		n += len(ops)
	}
	return n
}
