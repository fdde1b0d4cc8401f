package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/sandbox"
)

func TestToolsListSchemas(t *testing.T) {
	s := newTestServer(t, &fakeExecutor{}, nil)
	cs := connect(t, s, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var exec *mcp.Tool
	for _, tl := range res.Tools {
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("tool %s lacks a description or input schema", tl.Name)
		}
		if tl.Name == "execute" {
			exec = tl
		}
	}
	if exec == nil {
		t.Fatalf("no execute tool in %v", res.Tools)
	}
	b, _ := json.Marshal(exec)
	js := string(b)
	for _, want := range []string{`"argv"`, `"script"`, `"files"`, `"stdin"`, `"timeout_ms"`, "at most 1m0s", `"outputSchema"`, `"exit_code"`, `"output_limit"`, `"aster-sandbox:latest"`} {
		if !strings.Contains(js, want) {
			t.Errorf("execute tool JSON lacks %s:\n%s", want, js)
		}
	}
}

func TestExecuteBuildsSpec(t *testing.T) {
	fe := &fakeExecutor{}
	s := newTestServer(t, fe, nil)
	cs := connect(t, s, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{
		"script":       "print(open('data/in.txt').read())",
		"interpreter":  "python3",
		"args":         []string{"-x"},
		"files":        map[string]string{"data/in.txt": "hello"},
		"binary_files": map[string]string{"blob.bin": "AAEC"},
		"stdin":        "input",
		"env":          map[string]string{"MODE": "test"},
		"limits":       map[string]any{"timeout_ms": 5000, "memory_bytes": 256 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %s", textOf(res))
	}
	spec, stdin := fe.last(t)
	if got := strings.Join(spec.Argv, " "); got != "python3 /work/.aster-script -x" {
		t.Errorf("argv = %q", got)
	}
	if string(spec.Workspace.Files["data/in.txt"]) != "hello" || string(spec.Workspace.Files["blob.bin"]) != "\x00\x01\x02" ||
		!strings.Contains(string(spec.Workspace.Files[".aster-script"]), "print(") {
		t.Errorf("files = %q", spec.Workspace.Files)
	}
	if stdin != "input" || spec.Env["MODE"] != "test" {
		t.Errorf("stdin %q env %v", stdin, spec.Env)
	}
	if spec.Limits.TimeoutMS != 5000 || spec.Limits.MemoryBytes != 256<<20 || spec.Limits.Pids != 128 {
		t.Errorf("limits = %+v", spec.Limits)
	}
	if spec.Image != "aster-sandbox:latest" {
		t.Errorf("image = %q", spec.Image)
	}
	var w sandbox.WireResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if w.Status != sandbox.StatusOK || w.Stdout != "hi\n" || w.ID != "r-fake" {
		t.Errorf("structured = %+v", w)
	}
	if txt := textOf(res); !strings.Contains(txt, "status: ok (exit code 0)") || !strings.Contains(txt, "hi") {
		t.Errorf("text = %q", txt)
	}
}

func TestExecuteToolErrors(t *testing.T) {
	fe := &fakeExecutor{}
	s := newTestServer(t, fe, nil)
	cs := connect(t, s, nil)
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"nothing", map[string]any{}, "nothing to run"},
		{"both", map[string]any{"argv": []string{"true"}, "script": "x"}, "not both"},
		{"over ceiling", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"memory_bytes": 8 << 30}}, "above this server's ceiling of 1GiB"},
		{"negative", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"pids": -1}}, "invalid_spec"},
		{"below minimum", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"timeout_ms": 5}}, "timeout 5ms is out of range"},
		{"escaping path", map[string]any{"argv": []string{"true"}, "files": map[string]string{"../x": "y"}}, "invalid_spec"},
		{"bad base64", map[string]any{"argv": []string{"true"}, "binary_files": map[string]string{"x": "!!"}}, "not valid base64"},
		{"unknown field", map[string]any{"argv": []string{"true"}, "shell": true}, "shell"},
		{"wrong type", map[string]any{"argv": "echo hi"}, "argv"},
		{"interpreter flags", map[string]any{"script": "x", "interpreter": "python3 -u"}, "one program name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: c.args})
			if err != nil {
				t.Fatalf("protocol error instead of a tool error: %v", err)
			}
			if !res.IsError || !strings.Contains(textOf(res), c.want) {
				t.Errorf("isError=%v text=%q, want %q", res.IsError, textOf(res), c.want)
			}
		})
	}
	if n := fe.calls(); n != 0 {
		t.Errorf("executor called %d times for bad input", n)
	}
}
