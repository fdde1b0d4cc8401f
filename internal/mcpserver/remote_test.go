package mcpserver

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	moby "github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/openapitest"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/remote"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandboxapi"
)

// TestRemoteExecutor drives a real `aster sandbox serve` (in-process, over
// HTTP with a token) through the MCP tools: execute with streamed progress,
// run_tests, validate, a refused call, and cancellation.
func TestRemoteExecutor(t *testing.T) {
	rt := engine(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	const token = "remote-orchestrator-token-0123456789"
	tokens, err := sandboxapi.ParseTokens(strings.NewReader(token))
	if err != nil {
		t.Fatal(err)
	}
	hs := serveAPI(t, sandboxapi.Options{Manager: mgr, Tokens: tokens})
	// Every call the executor makes is checked against the API's OpenAPI description.
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(client.Options{BaseURL: hs.URL, Token: token, HTTPClient: spec.Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Executor: remote.Sandbox{Client: cl}}
	srv := newTestServer(t, rec, func(o *Options) {
		o.Images = []string{sandboxtest.Image()}
		o.ProgressInterval = 100 * time.Millisecond
	})
	var mu sync.Mutex
	var progress []string
	done := make(chan struct{}, 16)
	cs := connect(t, srv, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, r.Params.Message)
		if strings.HasPrefix(r.Params.Message, "finished") {
			done <- struct{}{}
		}
	}})

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Meta: mcp.Meta{"progressToken": 1},
		Arguments: map[string]any{"script": "echo one; sleep 0.5; echo two >&2; exit 4", "stdin": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	w := structured[sandbox.WireResult](t, res)
	if w.Status != sandbox.StatusExitNonzero || w.ExitCode != 4 || w.Stdout != "one\n" || w.Stderr != "two\n" || w.Runtime != "docker" {
		t.Fatalf("remote execute: %+v", w)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no finished notification")
	}
	mu.Lock()
	all := strings.Join(progress, "\n")
	mu.Unlock()
	if !strings.Contains(all, "last line: one") {
		t.Errorf("remote output did not reach progress:\n%s", all)
	}

	res = call(t, cs, "run_tests", map[string]any{"files": map[string]string{"go.mod": "module x\n\ngo 1.21\n", "x_test.go": "package x\nimport \"testing\"\nfunc TestA(t *testing.T) {}\nfunc TestB(t *testing.T) { t.Fatal(\"boom\") }\n"},
		"limits": map[string]any{"timeout": "60s"}})
	tr := structured[api.TestResponse](t, res)
	if tr.Tests.Passed != 1 || tr.Tests.Failed != 1 || len(tr.Tests.Failures) != 1 || !strings.Contains(tr.Tests.Failures[0].Message, "boom") {
		t.Fatalf("remote run_tests: %+v\n%s", tr.Tests, textOf(res))
	}

	res = call(t, cs, "validate", map[string]any{"files": map[string]string{"a.sh": "#!/bin/sh\ncd $1\n"}, "analyzers": []string{"shellcheck"}})
	if res.IsError || !strings.Contains(textOf(res), "a.sh:2") {
		t.Fatalf("remote validate: %s", textOf(res))
	}

	res = call(t, cs, "execute", map[string]any{"argv": []string{"true"}, "image": "not-allowed:latest"})
	if !res.IsError {
		t.Fatalf("unknown image accepted: %s", textOf(res))
	}

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"sh", "-c", "echo started; sleep 120"}}})
		errc <- err
	}()
	// The orchestrator names its own runs, so count this test's containers.
	waitFor(t, 60*time.Second, "the remote job to run", func() bool {
		id := rec.lastID()
		return id != "" && rec.wrote(id) && testContainers(t) == 1
	})
	cancel()
	<-errc
	waitFor(t, time.Minute, "the remote sandbox to be removed", func() bool { return testContainers(t) == 0 })
}

// testContainers counts the containers sandboxtest.Docker labelled for t.
func testContainers(t *testing.T) int {
	t.Helper()
	dc, err := moby.New(moby.WithHostFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	res, err := dc.ContainerList(context.Background(), moby.ContainerListOptions{
		All: true, Filters: make(moby.Filters).Add("label", "aster.test="+sandboxtest.Label(t)),
	})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return len(res.Items)
}
