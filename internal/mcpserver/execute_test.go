package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testkit"
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
	for _, want := range []string{`"argv"`, `"script"`, `"files"`, `"stdin"`, `"timeout"`, `"memory"`, `"workdir_size"`, "at most 1m0s", `"deprecated":true`, `"outputSchema"`, `"exit_code"`, `"output_limit"`, "allowlist: aster-sandbox:latest, other:1"} {
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
		"limits":       map[string]any{"timeout": "5s", "memory": "256m"},
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
		{"over ceiling", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"memory": "8g"}}, "invalid_spec: limits.memory 8GiB is above this server's ceiling of 1GiB"},
		{"over ceiling, old name", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"memory_bytes": 99999999999}}, "invalid_spec: limits.memory 93.1GiB is above this server's ceiling of 1GiB"},
		{"negative", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"pids": -1}}, "limits.pids -1 is out of range"},
		{"negative, old name", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"workdir_bytes": -1}}, `limits.workdir_size: size "-1" is negative`},
		{"below minimum", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"timeout": "5ms"}}, "limits.timeout 5ms is out of range (100ms to 6h0m0s)"},
		{"below minimum, old name", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"timeout_ms": 5}}, "limits.timeout 5ms is out of range"},
		{"not a duration", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"timeout": "soon"}}, `limits.timeout: "soon" is not a duration`},
		{"both names", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"timeout": "5s", "timeout_ms": 5000}}, "give only limits.timeout"},
		{"unknown limit", map[string]any{"argv": []string{"true"}, "limits": map[string]any{"network": "on"}}, "network"},
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

// TestLimitsVocabulary: the limits a call gives in the one vocabulary (the
// names and units of the HTTP API, the CLI flags and aster.yaml) reach the
// sandbox as config.ResolveLimits resolves them; the old names give the same
// limits and a deprecation notice in the result, the new ones none.
func TestLimitsVocabulary(t *testing.T) {
	fe := &fakeExecutor{}
	s := newTestServer(t, fe, nil)
	cs := connect(t, s, nil)
	want, err := config.ResolveLimits(config.LimitsConfig{Timeout: "5s", Memory: "256m", CPUs: "0.5", Pids: "64",
		OutputLimit: "2m", WorkdirSize: "128m"}, config.DefaultLimits(), testCeilings())
	if err != nil {
		t.Fatal(err)
	}
	if want.TimeoutMS != 5000 || want.MemoryBytes != 256<<20 || want.MilliCPUs != 500 || want.Pids != 64 || want.OutputBytes != 2<<20 || want.WorkdirBytes != 128<<20 {
		t.Fatalf("resolved %+v", want)
	}
	for _, c := range []struct {
		name       string
		limits     map[string]any
		deprecated []string
	}{
		{"new names", map[string]any{"timeout": "5s", "memory": "256m", "cpus": 0.5, "pids": 64, "output_limit": "2m", "workdir_size": "128m"}, nil},
		{"other spellings of the same", map[string]any{"timeout": "5000ms", "memory": "268435456", "cpus": 0.5, "pids": 64, "output_limit": "2MiB", "workdir_size": "0.125g"}, nil},
		{"old names", map[string]any{"timeout_ms": 5000, "memory_bytes": 256 << 20, "milli_cpus": 500, "pids": 64, "output_bytes": 2 << 20, "workdir_bytes": 128 << 20},
			[]string{"timeout_ms", "memory_bytes", "milli_cpus", "output_bytes", "workdir_bytes"}},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"true"}, "limits": c.limits}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", c.name, err, textOf(res))
		}
		spec, _ := fe.last(t)
		if spec.Limits != want {
			t.Errorf("%s: limits %+v, want %+v", c.name, spec.Limits, want)
		}
		text := textOf(res)
		if len(c.deprecated) == 0 && strings.Contains(text, "eprecat") {
			t.Errorf("%s: deprecation notice without old names: %s", c.name, text)
		}
		for _, old := range c.deprecated {
			if !strings.Contains(text, "limits."+old+" is deprecated") {
				t.Errorf("%s: no deprecation notice for %s in %q", c.name, old, text)
			}
		}
	}
	// run_tests takes the same names, with the same notice.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_tests", Arguments: map[string]any{
		"files": map[string]string{"go.mod": "module x\n"}, "limits": map[string]any{"timeout_ms": 45000}}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "limits.timeout_ms is deprecated and will be removed in the next release: use limits.timeout") {
		t.Fatalf("run_tests with an old name: %v %s", err, textOf(res))
	}
	if spec, _ := fe.last(t); spec.Limits.TimeoutMS != 45_000 {
		t.Errorf("run_tests timeout %d", spec.Limits.TimeoutMS)
	}
}

// With several bad files the same one is named every time, text files
// first, then binary ones.
func TestExecuteNamesBadFilesInOneOrder(t *testing.T) {
	s := newTestServer(t, &fakeExecutor{}, nil)
	for _, c := range []struct {
		in   ExecuteInput
		want string
	}{
		{ExecuteInput{Argv: []string{"true"}, Files: map[string]string{"ok": "", "../c": "", "/b": "", "../a": ""}}, `file "../a"`},
		{ExecuteInput{Argv: []string{"true"}, BinaryFiles: map[string]string{"ok": "AA==", "z": "!", "m": "?", "k": "*"}}, `binary_files["k"]`},
		{ExecuteInput{Argv: []string{"true"}, Files: map[string]string{"b": "", "./a": ""}, BinaryFiles: map[string]string{"a": "", "./b": ""}}, `file "./b" is given twice`},
	} {
		got := testkit.Same(t, func() string {
			_, _, err := s.executeSpec(c.in)
			return fmt.Sprint(err)
		})
		if !strings.Contains(got, c.want) {
			t.Errorf("executeSpec(%+v): %s, want %s", c.in, got, c.want)
		}
	}
}

// A snapshot's bad binary files are named in one order too.
func TestSnapshotNamesBadFilesInOneOrder(t *testing.T) {
	s := newTestServer(t, &fakeExecutor{}, nil)
	in := SnapshotInput{Files: map[string]string{"a": ""}, BinaryFiles: map[string]string{"ok": "AA==", "z": "!", "m": "?", "k": "*"}}
	got := testkit.Same(t, func() string {
		_, err := s.spoolSnapshot(in, 1<<20)
		return fmt.Sprint(err)
	})
	if want := `binary_files["k"]`; !strings.Contains(got, want) {
		t.Errorf("spoolSnapshot: %s, want %s", got, want)
	}
}
