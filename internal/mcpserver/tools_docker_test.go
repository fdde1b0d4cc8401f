package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content: %v\n%s", err, b)
	}
	return v
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

// readTree returns a directory's files as the files argument of a tool.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestRunTestsTool(t *testing.T) {
	e := newDockerEnv(t, 2, 8)
	testdata := filepath.Join(sandboxtest.RepoRoot(t), "internal", "testrun", "testdata")
	e.srv.opts.AllowedDirs = []string{testdata}
	cs := e.httpSession(t, nil)

	t.Run("go project by path, detected", func(t *testing.T) {
		res := call(t, cs, "run_tests", map[string]any{"path": "gopass", "limits": map[string]any{"timeout": "2m"}})
		out := structured[api.TestResponse](t, res)
		if res.IsError || out.Status != "ok" || !out.Tests.Parsed || out.Tests.Passed == 0 || out.Tests.Failed != 0 || out.Tests.Framework != "go" {
			t.Fatalf("go tests: %+v\n%s", out.Tests, textOf(res))
		}
		if !strings.Contains(textOf(res), "tests: ") || !strings.Contains(textOf(res), "passed, 0 failed") {
			t.Fatalf("text: %s", textOf(res))
		}
	})
	t.Run("pytest project as files, failing", func(t *testing.T) {
		res := call(t, cs, "run_tests", map[string]any{"files": readTree(t, filepath.Join(testdata, "pyfail")), "limits": map[string]any{"timeout": "2m"}})
		out := structured[api.TestResponse](t, res)
		if out.Status != "exit_nonzero" || out.Tests.Framework != "pytest" || out.Tests.Failed == 0 || len(out.Tests.Failures) == 0 {
			t.Fatalf("pytest: %+v\n%s", out.Tests, textOf(res))
		}
		if !strings.Contains(textOf(res), "FAIL ") {
			t.Fatalf("failures not in the text: %s", textOf(res))
		}
	})
	t.Run("custom command", func(t *testing.T) {
		res := call(t, cs, "run_tests", map[string]any{"files": map[string]string{"check.sh": "test \"$(cat x)\" = y"}, "command": []string{"sh", "check.sh"}})
		out := structured[api.TestResponse](t, res)
		if out.Status != "exit_nonzero" || strings.Join(out.Command, " ") != "sh check.sh" {
			t.Fatalf("custom: %+v", out)
		}
	})
	for name, args := range map[string]map[string]any{
		"outside the allowed dirs": {"path": "/etc"},
		"escaping by ..":           {"path": "../../.."},
		"nothing detected":         {"files": map[string]string{"README": "hi"}},
		"two snapshots":            {"path": "gopass", "files": map[string]string{"a": "b"}},
		"no snapshot":              {},
	} {
		t.Run(name, func(t *testing.T) {
			res := call(t, cs, "run_tests", args)
			if !res.IsError || !strings.HasPrefix(textOf(res), "invalid_spec: ") {
				t.Fatalf("want an invalid_spec tool error, got %v %q", res.IsError, textOf(res))
			}
		})
	}
}

func TestValidateTool(t *testing.T) {
	e := newDockerEnv(t, 2, 8)
	cs := e.connectInMemory(t)
	res := call(t, cs, "validate", map[string]any{
		"files": map[string]string{
			"deploy.sh": "#!/bin/sh\nrm -rf $DIR/*\necho $1\n",
			"app.py":    "import subprocess\nsubprocess.call('ls ' + input(), shell=True)\n",
		},
		"analyzers": []string{"shellcheck", "bandit", "semgrep"},
	})
	if res.IsError {
		t.Fatalf("validate: %s", textOf(res))
	}
	out := structured[gate.Result](t, res)
	byAnalyzer := map[string]int{}
	for _, f := range out.Findings {
		byAnalyzer[f.Analyzer]++
	}
	if byAnalyzer["shellcheck"] == 0 || byAnalyzer["bandit"] == 0 {
		t.Fatalf("findings %v\n%s", byAnalyzer, textOf(res))
	}
	status := map[string]gate.Status{}
	for _, a := range out.Analyzers {
		status[a.Name] = a.Status
	}
	if status["shellcheck"] != gate.StatusOK || status["bandit"] != gate.StatusOK || status["semgrep"] != gate.StatusSkipped {
		t.Fatalf("analyzer statuses %v\n%s", status, textOf(res))
	}
	if !strings.Contains(textOf(res), "deploy.sh:2") {
		t.Fatalf("text: %s", textOf(res))
	}
	bad := call(t, cs, "validate", map[string]any{"files": map[string]string{"a": "b"}, "analyzers": []string{"nope"}})
	if !bad.IsError {
		t.Fatalf("unknown analyzer accepted: %s", textOf(bad))
	}
}

func (e *dockerEnv) connectInMemory(t *testing.T) *mcp.ClientSession {
	return connect(t, e.srv, nil)
}
