package mcpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandboxapi"
)

// TestLimitErrorsSameOnHTTPAndMCP: the HTTP API and the MCP tools, over the
// same real Manager and ceilings, refuse a too-large limit with the same
// text, in human units, naming the field by its one name — whether the MCP
// call uses the new name or the deprecated one.
func TestLimitErrorsSameOnHTTPAndMCP(t *testing.T) {
	mgr := sandboxtest.Manager(t, engine(t), 1)
	ceilings, err := config.DefaultCeilings().Parse()
	if err != nil {
		t.Fatal(err)
	}
	hs := serveAPI(t, sandboxapi.Options{Manager: mgr, Ceilings: ceilings})
	srv := newTestServer(t, mgr, func(o *Options) {
		o.Images = []string{sandboxtest.Image()}
		o.Defaults = mgr.Limits()
		o.Ceilings = ceilings
	})
	cs := connect(t, srv, nil)

	for _, c := range []struct {
		name       string
		http, mcp  map[string]any
		deprecated map[string]any
		want       string
	}{
		{"memory", map[string]any{"memory": 99999999999}, map[string]any{"memory": "99999999999"}, map[string]any{"memory_bytes": 99999999999},
			"limits.memory 93.1GiB is above this server's ceiling of 4GiB"},
		{"timeout", map[string]any{"timeout": "1h"}, map[string]any{"timeout": "1h"}, map[string]any{"timeout_ms": 3_600_000},
			"limits.timeout 1h0m0s is above this server's ceiling of 10m0s"},
		{"cpus", map[string]any{"cpus": 2.5}, map[string]any{"cpus": 2.5}, map[string]any{"milli_cpus": 2500},
			"limits.cpus 2.5 is above this server's ceiling of 2"},
		{"below the minimum", map[string]any{"pids": 3}, map[string]any{"pids": 3}, nil,
			"limits.pids 3 is out of range (8 to 32768)"},
	} {
		body, _ := json.Marshal(map[string]any{"argv": []string{"true"}, "limits": c.http})
		resp, err := http.Post(hs.URL+api.RouteExecute, api.ContentTypeJSON, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || eb.Error.Code != "invalid_spec" || eb.Error.Message != "invalid spec: "+c.want {
			t.Errorf("%s: HTTP %d %+v, want 400 invalid_spec %q", c.name, resp.StatusCode, eb.Error, c.want)
		}
		for _, args := range []map[string]any{c.mcp, c.deprecated} {
			if args == nil {
				continue
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"true"}, "limits": args}})
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(res); !res.IsError || got != "invalid_spec: "+c.want {
				t.Errorf("%s: MCP %v: %q, want the HTTP text %q", c.name, args, got, c.want)
			}
		}
	}
}
