package modelstep

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/llm"
	"github.com/asterhq/aster/internal/llm/llmtest"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/sandbox"
)

// fakeSandbox records every Spec and answers with scripted output. It reads
// the workspace tar as a real sandbox would, and feeds OnOutput.
type fakeSandbox struct {
	mu     sync.Mutex
	specs  []sandbox.Spec
	files  [][]string
	output func(spec sandbox.Spec) string
}

func (f *fakeSandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	var names []string
	if spec.Workspace.Tar != nil {
		tr := tar.NewReader(spec.Workspace.Tar)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			names = append(names, h.Name)
		}
	}
	out := f.output(spec)
	if spec.OnOutput != nil {
		spec.OnOutput(sandbox.Stdout, []byte(out))
	}
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	f.files = append(f.files, names)
	f.mu.Unlock()
	return sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Output{Data: []byte(out)}, Duration: 1500 * time.Millisecond}, nil
}

func snapshotOf(t testing.TB, files map[string]string) func() (io.ReadCloser, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
}

func TestAgenticToolsThroughTheSandbox(t *testing.T) {
	for _, p := range mtProviders {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			sb := &fakeSandbox{output: func(spec sandbox.Spec) string {
				if slices.Contains(spec.Argv, "go") {
					return `{"Action":"run","Package":"demo","Test":"TestRun"}` + "\n" +
						`{"Action":"output","Package":"demo","Test":"TestRun","Output":"boom\n"}` + "\n" +
						`{"Action":"fail","Package":"demo","Test":"TestRun","Elapsed":0.1}` + "\n"
				}
				// A program that prints Aster's key (as if it had guessed it), a token, and a lot more.
				return "MODEL_KEY=" + mtKey + "\nTOKEN=" + mtToken + "\n" + strings.Repeat("noise line\n", 5000) + "LAST LINE\n"
			}}
			srv := p.start(t)
			srv.Push(
				// Three calls in one turn; K is 2, so the third is refused.
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{
					{Name: ToolRunCommand, Arguments: `{"argv":["sh","-c","cat config.py; env"]}`},
					{Name: ToolRunTests, Arguments: `{}`},
					{Name: ToolRunCommand, Arguments: `{"argv":["rm","-rf","/"]}`},
				}},
				llmtest.Reply{Text: okAnswer("app/server.py", 26)},
			)
			ch := &review.Change{OpenSnapshot: snapshotOf(t, map[string]string{"go.mod": "module demo\n", "main.go": "package main\n"})}
			agent := &Agent{Sandbox: sb, Image: "aster-sandbox:test", Timeout: 45 * time.Second, Change: ch, TempDir: t.TempDir()}
			r, _ := mtReviewer(t, p, srv, func(mo *ModelOptions, co *llm.ClientOptions) {
				mo.Agent, mo.MaxToolCalls, mo.MaxResultBytes = agent, 2, 1200
			})
			in := mtInput(t)
			rep, err := r.Review(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			safeReport(t, rep, in)

			// The sandbox ran exactly K calls, with nothing secret in their specs.
			if len(sb.specs) != 2 {
				t.Fatalf("%d sandbox runs, want 2", len(sb.specs))
			}
			cmd, tests := sb.specs[0], sb.specs[1]
			if strings.Join(cmd.Argv, " ") != "sh -c cat config.py; env" || len(cmd.Env) != 1 || cmd.Env["HOME"] != "/tmp" ||
				cmd.Limits.TimeoutMS != 45_000 || cmd.Image != "aster-sandbox:test" {
				t.Fatalf("run_command spec = %+v", cmd)
			}
			if !strings.HasSuffix(strings.Join(tests.Argv, " "), " go test -json ./...") || tests.Limits.TimeoutMS != 45_000 {
				t.Fatalf("run_tests spec = %+v", tests)
			}
			for i, s := range sb.specs {
				if dump := fmt.Sprintf("%v %v %v %v", s.Argv, s.Env, s.Image, sb.files[i]); strings.Contains(dump, mtKey) {
					t.Fatalf("the API key reached a sandbox: %s", dump)
				}
				if fmt.Sprint(sb.files[i]) != "[go.mod main.go]" && fmt.Sprint(sb.files[i]) != "[main.go go.mod]" {
					t.Fatalf("workspace = %v", sb.files[i])
				}
			}

			// What went back to the model: framed, redacted, truncated.
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			for _, r := range reqs {
				if strings.Contains(string(r.Body), mtKey) || strings.Contains(string(r.Body), mtToken) {
					t.Fatal("a secret from tool output reached the model")
				}
			}
			results := reqs[1].ToolResults()
			if len(results) != 3 {
				t.Fatalf("tool results = %q", results)
			}
			res := results[0]
			if len(res) > 1200 || !strings.Contains(res, "tool_output>>>") || !strings.Contains(res, "[REDACTED:configured-secret]") ||
				!strings.Contains(res, "bytes cut") || !strings.Contains(res, "LAST LINE") {
				t.Fatalf("tool result (%d bytes) = %q", len(res), res)
			}
			if !strings.Contains(results[1], "FAIL TestRun") || !strings.Contains(results[2], "tool-call limit of 2 reached") {
				t.Fatalf("tool results = %q", results[1:])
			}
			if tc := fmt.Sprint(reqs[1].JSON["tool_choice"]); tc != "none" && tc != "map[type:none]" {
				t.Fatalf("final turn tool_choice = %s", tc)
			}
			if !strings.Contains(p.system(reqs[0].JSON), "at most 2 times") {
				t.Fatal("system prompt does not state the tool limit")
			}
			if !strings.Contains(rep.Note, "2 sandboxed tool call(s)") || !strings.Contains(rep.Note, "more than 2 tool calls") {
				t.Fatalf("note = %q", rep.Note)
			}
			if len(rep.Comments) != 1 || rep.Comments[0].Line != 26 {
				t.Fatalf("comments = %+v", rep.Comments)
			}
		})
	}
}

func TestAgenticModelIgnoringToolLimit(t *testing.T) {
	for _, p := range mtProviders {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			sb := &fakeSandbox{output: func(sandbox.Spec) string { return "hello from the sandbox\n" }}
			srv := p.start(t)
			srv.Push(
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: ToolRunCommand, Arguments: `{"argv":["echo","hi"]}`}}},
				// Told not to call tools any more, it does anyway.
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: ToolRunCommand, Arguments: `{"argv":["echo","again"]}`}}},
				llmtest.Reply{Text: okAnswer("app/server.py", 26)},
			)
			ch := &review.Change{OpenSnapshot: snapshotOf(t, map[string]string{"main.go": "package main\n"})}
			agent := &Agent{Sandbox: sb, Image: "img", Change: ch, TempDir: t.TempDir()}
			r, _ := mtReviewer(t, p, srv, func(mo *ModelOptions, co *llm.ClientOptions) {
				mo.Agent, mo.MaxToolCalls = agent, 1
			})
			rep, err := r.Review(t.Context(), mtInput(t))
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(sb.specs) != 1 || len(reqs) != 3 || len(rep.Comments) != 1 {
				t.Fatalf("%d runs, %d calls, comments %+v, note %q", len(sb.specs), len(reqs), rep.Comments, rep.Note)
			}
			// The follow-up keeps the tool round and forbids tools.
			last := string(reqs[2].Body)
			if !strings.Contains(last, "hello from the sandbox") || !strings.Contains(last, "without calling tools") {
				t.Fatalf("follow-up = %s", last)
			}
			if tc := fmt.Sprint(reqs[2].JSON["tool_choice"]); tc != "none" && tc != "map[type:none]" {
				t.Fatalf("follow-up tool_choice = %s", tc)
			}
		})
	}
}

func TestAgentRejectsBadArguments(t *testing.T) {
	a := &Agent{Sandbox: &fakeSandbox{output: func(sandbox.Spec) string { return "" }}}
	for _, args := range []string{`{}`, `{"argv":[]}`, `{"argv":[""]}`, `{"argv":"ls"}`, `{"argv":["a\u0000b"]}`,
		`{"argv":["` + strings.Repeat("x", 5000) + `"]}`, `{"argv":[` + strings.Repeat(`"a",`, 70) + `"a"]}`} {
		if _, err := a.RunTool(t.Context(), llm.ToolCall{Name: ToolRunCommand, Arguments: []byte(args)}); err == nil {
			t.Errorf("accepted %.60s", args)
		}
	}
	if _, err := a.RunTool(t.Context(), llm.ToolCall{Name: "shell", Arguments: []byte(`{}`)}); err == nil {
		t.Error("unknown tool accepted")
	}
}
