package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// GraphQLPath is where the fake serves GitHub's GraphQL API: GitHub Enterprise Server's
// /api/graphql beside the REST API's /api/v3.
const GraphQLPath = "/api/graphql"

// schemaFile is GitHub's published GraphQL schema (@octokit/graphql-schema).
const schemaFile = "graphql-schema/schema.graphql"

// loadSchema parses GitHub's published schema once per test process. The published SDL
// repeats two fields of EnterpriseOwnerInfo (a defect of the published file, not of GitHub's
// API, which answers them once); the first definition of a repeated field is kept, so
// validation is otherwise the schema's own.
var loadSchema = sync.OnceValues(func() (*ast.Schema, error) {
	dir, err := DataDir()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, schemaFile))
	if err != nil {
		return nil, fmt.Errorf("GitHub's GraphQL schema not installed (run scripts/fetch-test-deps.sh): %w", err)
	}
	doc, gerr := parser.ParseSchemas(validator.Prelude, &ast.Source{Name: "github.graphql", Input: string(b)})
	if gerr != nil {
		return nil, fmt.Errorf("parse %s: %w", schemaFile, gerr)
	}
	for _, d := range doc.Definitions {
		seen := map[string]bool{}
		kept := d.Fields[:0]
		for _, f := range d.Fields {
			if !seen[f.Name] {
				seen[f.Name] = true
				kept = append(kept, f)
			}
		}
		d.Fields = kept
	}
	schema, gerr := validator.ValidateSchemaDocument(doc)
	if gerr != nil {
		return nil, fmt.Errorf("load %s: %w", schemaFile, gerr)
	}
	return schema, nil
})

// ValidateGraphQL checks a query or mutation against GitHub's published schema, as GitHub
// does before running it: every field, argument, variable and type must exist and fit.
func ValidateGraphQL(query string) error {
	schema, err := loadSchema()
	if err != nil {
		return err
	}
	if _, errs := gqlparser.LoadQueryWithRules(schema, query, nil); len(errs) > 0 {
		return errs
	}
	return nil
}

// gqlRequest is the body of a GraphQL request.
type gqlRequest struct {
	Query         string         `json:"query"`
	Variables     map[string]any `json:"variables"`
	OperationName string         `json:"operationName"`
}

// gqlError is what the fake answers when a request is refused or a field fails. Like
// GitHub, it answers 200 with an errors list for a query that does not validate.
type gqlError struct {
	Type    string `json:"type,omitempty"`
	Message string `json:"message"`
}

// serveGraphQL answers POST /api/graphql: review threads of a pull request and
// resolveReviewThread. Every document is validated against GitHub's schema first; a field
// the schema has but the fake does not serve fails the test (OnReject), like a REST
// operation the fake does not implement.
func (s *Server) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	rec := Request{Method: r.Method, Path: GraphQLPath, Operation: "graphql", Auth: "token"}
	sw := &statusWriter{ResponseWriter: w, answered: func(status int) { rec.Status = status; s.record(rec) }}
	defer sw.finish()
	if r.Method != http.MethodPost {
		s.reject(sw, http.StatusNotFound, "%s %s: GitHub's GraphQL API takes POST only", r.Method, GraphQLPath)
		return
	}
	grant, ok := s.graphQLToken(sw, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		s.reject(sw, http.StatusBadRequest, "read body: %v", err)
		return
	}
	var in gqlRequest
	if err := json.Unmarshal(body, &in); err != nil || strings.TrimSpace(in.Query) == "" {
		s.reject(sw, http.StatusBadRequest, "graphql: the body is not {\"query\": ...} JSON")
		return
	}
	schema, err := loadSchema()
	if err != nil {
		s.t.Fatalf("githubtest: %v", err) // the test's own setup: see RequireData
	}
	doc, errs := gqlparser.LoadQueryWithRules(schema, in.Query, nil)
	if len(errs) > 0 {
		s.opts.OnReject("githubtest: rejected: graphql: not valid against GitHub's schema: %v", errs)
		writeJSON(sw, http.StatusOK, map[string]any{"errors": []gqlError{{Message: errs.Error()}}})
		return
	}
	op := doc.Operations.ForName(in.OperationName)
	if op == nil {
		s.reject(sw, http.StatusBadRequest, "graphql: no operation %q in the document", in.OperationName)
		return
	}
	vars, gerr := validator.VariableValues(schema, op, in.Variables)
	if gerr != nil {
		s.opts.OnReject("githubtest: rejected: graphql variables: %v", gerr)
		writeJSON(sw, http.StatusOK, map[string]any{"errors": []gqlError{{Message: gerr.Error()}}})
		return
	}
	if fault := s.fault(sw, "graphql"); fault {
		return
	}
	need := "read"
	if op.Operation == ast.Mutation {
		need = "write"
	}
	if !allows(grant.Permissions["pull_requests"], need) {
		writeJSON(sw, http.StatusOK, map[string]any{"errors": []gqlError{{Type: "FORBIDDEN", Message: "Resource not accessible by integration"}}})
		return
	}
	ex := &gqlExec{s: s, vars: vars, grant: grant}
	root := ex.query
	if op.Operation == ast.Mutation {
		root = ex.mutation
	}
	data, err := ex.selection(op.SelectionSet, root)
	var nf *gqlNotFound
	switch {
	case errors.As(err, &nf):
		// GitHub answers a missing or unreachable object with null and a NOT_FOUND error.
		writeJSON(sw, http.StatusOK, map[string]any{"data": nil, "errors": []gqlError{{Type: "NOT_FOUND", Message: nf.msg}}})
	case err != nil:
		s.reject(sw, http.StatusNotImplemented, "graphql: %v", err)
	default:
		writeJSON(sw, http.StatusOK, map[string]any{"data": data})
	}
}

// graphQLToken checks the installation token of a GraphQL request.
func (s *Server) graphQLToken(w http.ResponseWriter, r *http.Request) (TokenGrant, bool) {
	grant, ok := s.grantOf(r)
	if !ok {
		s.reject(w, http.StatusUnauthorized, "graphql without a valid installation token")
		return TokenGrant{}, false
	}
	if time.Now().After(grant.ExpiresAt) {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
		return TokenGrant{}, false
	}
	return grant, true
}

// gqlNotFound is an object the query names that does not exist or the token cannot see.
type gqlNotFound struct{ msg string }

func (e *gqlNotFound) Error() string { return e.msg }

// gqlObject resolves the fields of one object; it returns errNoField for a field the fake
// does not serve.
type gqlObject func(f *ast.Field, args map[string]any) (any, error)

var errNoField = errors.New("field not served by the fake")

// gqlExec runs one validated operation.
type gqlExec struct {
	s     *Server
	vars  map[string]any
	grant TokenGrant
}

// selection evaluates a selection set on obj.
func (e *gqlExec) selection(set ast.SelectionSet, obj gqlObject) (map[string]any, error) {
	out := map[string]any{}
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			if sel.Name == "__typename" {
				// An object of an interface type (an Actor) names its concrete type.
				name, err := obj(sel, nil)
				if errors.Is(err, errNoField) {
					name, err = sel.ObjectDefinition.Name, nil
				}
				if err != nil {
					return nil, err
				}
				out[sel.Alias] = name
				continue
			}
			v, err := obj(sel, sel.ArgumentMap(e.vars))
			if errors.Is(err, errNoField) {
				return nil, fmt.Errorf("the fake does not serve %s.%s", sel.ObjectDefinition.Name, sel.Name)
			}
			if err != nil {
				return nil, err
			}
			if out[sel.Alias], err = e.value(sel, v); err != nil {
				return nil, err
			}
		case *ast.InlineFragment:
			m, err := e.selection(sel.SelectionSet, obj)
			if err != nil {
				return nil, err
			}
			for k, v := range m {
				out[k] = v
			}
		case *ast.FragmentSpread:
			m, err := e.selection(sel.Definition.SelectionSet, obj)
			if err != nil {
				return nil, err
			}
			for k, v := range m {
				out[k] = v
			}
		}
	}
	return out, nil
}

func (e *gqlExec) value(f *ast.Field, v any) (any, error) {
	switch v := v.(type) {
	case gqlObject:
		if v == nil {
			return nil, nil
		}
		return e.selection(f.SelectionSet, v)
	case []gqlObject:
		out := make([]any, len(v))
		for i, o := range v {
			m, err := e.selection(f.SelectionSet, o)
			if err != nil {
				return nil, err
			}
			out[i] = m
		}
		return out, nil
	}
	return v, nil
}

// query is the Query root: repository(owner, name).
func (e *gqlExec) query(f *ast.Field, args map[string]any) (any, error) {
	if f.Name != "repository" {
		return nil, errNoField
	}
	owner, _ := args["owner"].(string)
	name, _ := args["name"].(string)
	rs, err := e.repo(owner, name)
	if err != nil {
		return nil, err
	}
	return e.repository(rs), nil
}

// repo finds a repository the token may see.
func (e *gqlExec) repo(owner, name string) (*repoState, error) {
	full := owner + "/" + name
	e.s.mu.Lock()
	rs := e.s.repos[full]
	installed := containsFold(e.s.installed, full)
	e.s.mu.Unlock()
	if rs == nil || !installed || (len(e.grant.Repositories) > 0 && !containsFold(e.grant.Repositories, name)) {
		return nil, &gqlNotFound{msg: fmt.Sprintf("Could not resolve to a Repository with the name '%s'.", full)}
	}
	return rs, nil
}

func (e *gqlExec) repository(rs *repoState) gqlObject {
	return func(f *ast.Field, args map[string]any) (any, error) {
		switch f.Name {
		case "nameWithOwner":
			return rs.Owner + "/" + rs.Name, nil
		case "pullRequest":
			n, _ := gqlInt(args["number"])
			e.s.mu.Lock()
			pr := rs.pulls[int(n)]
			e.s.mu.Unlock()
			if pr == nil {
				return nil, &gqlNotFound{msg: fmt.Sprintf("Could not resolve to a PullRequest with the number of %d.", n)}
			}
			return e.pullRequest(rs, pr.Number), nil
		}
		return nil, errNoField
	}
}

func (e *gqlExec) pullRequest(rs *repoState, number int) gqlObject {
	return func(f *ast.Field, args map[string]any) (any, error) {
		switch f.Name {
		case "number":
			return number, nil
		case "reviewThreads":
			e.s.mu.Lock()
			threads := threadsOf(rs, number)
			e.s.mu.Unlock()
			objs := make([]gqlObject, len(threads))
			for i, t := range threads {
				objs[i] = e.thread(t)
			}
			return connection(objs, args)
		}
		return nil, errNoField
	}
}

func (e *gqlExec) thread(t Thread) gqlObject {
	return func(f *ast.Field, args map[string]any) (any, error) {
		switch f.Name {
		case "id":
			return t.ID, nil
		case "isResolved":
			return t.Resolved, nil
		case "isOutdated":
			return false, nil
		case "path":
			return t.Comments[0].Path, nil
		case "line":
			return t.Comments[0].Line, nil
		case "resolvedBy":
			if !t.Resolved {
				return gqlObject(nil), nil
			}
			return e.actor(t.ResolvedBy), nil
		case "comments":
			objs := make([]gqlObject, len(t.Comments))
			for i, c := range t.Comments {
				objs[i] = e.comment(c)
			}
			return connection(objs, args)
		}
		return nil, errNoField
	}
}

func (e *gqlExec) comment(c Comment) gqlObject {
	return func(f *ast.Field, args map[string]any) (any, error) {
		switch f.Name {
		case "id":
			return nodeID("PRRC_", c.ID), nil
		case "databaseId", "fullDatabaseId":
			if f.Name == "fullDatabaseId" {
				return strconv.FormatInt(c.ID, 10), nil // a BigInt, sent as a string
			}
			return c.ID, nil
		case "body":
			return c.Body, nil
		case "path":
			return c.Path, nil
		case "author":
			return e.actor(c.Author), nil
		}
		return nil, errNoField
	}
}

// actor is a user or an App. GitHub's GraphQL API names an App's bot by its slug, without
// the "[bot]" the REST API appends, and types it Bot.
func (e *gqlExec) actor(login string) gqlObject {
	return func(f *ast.Field, args map[string]any) (any, error) {
		switch f.Name {
		case "login":
			return strings.TrimSuffix(login, "[bot]"), nil
		case "__typename":
			if strings.HasSuffix(login, "[bot]") {
				return "Bot", nil
			}
			return "User", nil
		}
		return nil, errNoField
	}
}

// connection is one page of a GraphQL connection. Like GitHub, it wants first or last,
// at most 100.
func connection(objs []gqlObject, args map[string]any) (gqlObject, error) {
	first, hasFirst := gqlInt(args["first"])
	if !hasFirst || first < 1 || first > 100 {
		return nil, fmt.Errorf("connections need first between 1 and 100 (GitHub refuses others): got %v", args["first"])
	}
	start := 0
	if after, ok := args["after"].(string); ok && after != "" {
		n, err := decodeCursor(after)
		if err != nil {
			return nil, err
		}
		start = min(n+1, len(objs))
	}
	end := min(start+int(first), len(objs))
	page := objs[start:end]
	return func(f *ast.Field, _ map[string]any) (any, error) {
		switch f.Name {
		case "nodes":
			return page, nil
		case "totalCount":
			return len(objs), nil
		case "pageInfo":
			return gqlObject(func(f *ast.Field, _ map[string]any) (any, error) {
				switch f.Name {
				case "hasNextPage":
					return end < len(objs), nil
				case "hasPreviousPage":
					return start > 0, nil
				case "endCursor":
					if end == start {
						return nil, nil
					}
					return cursor(end - 1), nil
				case "startCursor":
					if end == start {
						return nil, nil
					}
					return cursor(start), nil
				}
				return nil, errNoField
			}), nil
		}
		return nil, errNoField
	}, nil
}

func cursor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:" + strconv.Itoa(i)))
}

func decodeCursor(c string) (int, error) {
	b, err := base64.StdEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), "cursor:") {
		return 0, fmt.Errorf("cursor %q is not one the fake gave", c)
	}
	return strconv.Atoi(strings.TrimPrefix(string(b), "cursor:"))
}

// mutation is the Mutation root: resolveReviewThread and unresolveReviewThread.
func (e *gqlExec) mutation(f *ast.Field, args map[string]any) (any, error) {
	if f.Name != "resolveReviewThread" && f.Name != "unresolveReviewThread" {
		return nil, errNoField
	}
	input, _ := args["input"].(map[string]any)
	id, _ := input["threadId"].(string)
	t, err := e.s.setResolved(e.grant, id, f.Name == "resolveReviewThread", e.s.BotLogin())
	if err != nil {
		return nil, err
	}
	return gqlObject(func(f *ast.Field, _ map[string]any) (any, error) {
		switch f.Name {
		case "thread":
			return e.thread(t), nil
		case "clientMutationId":
			return input["clientMutationId"], nil
		}
		return nil, errNoField
	}), nil
}

// gqlInt is an Int argument, literal (int64) or from JSON variables (float64 or json.Number).
func gqlInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64:
		return int64(v), v == float64(int64(v))
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}
