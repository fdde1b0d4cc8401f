package cli

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/llm/llmtest"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/review/modelstep"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

const cliModelKey = "sk-cli-test-Qw3rTy8uI0pAs5dF7gH9"

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestNewReviewerFromConfig(t *testing.T) {
	c := config.Default()
	// No provider: no model step, and the report will say so.
	r, err := newReviewer(c, nil, envMap(nil), modelFlags{}, reviewSandbox{})
	if err != nil || r != nil {
		t.Fatalf("no provider: %v %v", r, err)
	}
	env := map[string]string{"ASTER_LLM_PROVIDER": "openai", "ASTER_LLM_MODEL": "llama3.1", "ASTER_LLM_BASE_URL": "http://127.0.0.1:11434/v1"}
	if r, err = newReviewer(c, nil, envMap(env), modelFlags{}, reviewSandbox{}); err != nil || r == nil {
		t.Fatalf("openai without key (a local server): %v %v", r, err)
	}
	if r, err = newReviewer(c, nil, envMap(env), modelFlags{noModel: true}, reviewSandbox{}); err != nil || r != nil {
		t.Fatalf("--no-model: %v %v", r, err)
	}
	env = map[string]string{"ASTER_LLM_PROVIDER": "anthropic", "ASTER_LLM_MODEL": "claude-x", "ANTHROPIC_API_KEY": cliModelKey}
	if r, err = newReviewer(c, nil, envMap(env), modelFlags{}, reviewSandbox{}); err != nil || r == nil {
		t.Fatalf("anthropic: %v %v", r, err)
	}
	delete(env, "ANTHROPIC_API_KEY")
	if _, err = newReviewer(c, nil, envMap(env), modelFlags{}, reviewSandbox{}); err == nil {
		t.Fatal("anthropic without a key accepted")
	}
}

func TestReviewModelFlagErrors(t *testing.T) {
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"review", "--agentic", "."}, "--agentic needs a model"},
		{map[string]string{"ASTER_LLM_PROVIDER": "openai", "ASTER_LLM_MODEL": "m"}, []string{"review", "--agentic", "--no-model", "."}, "--agentic needs a model"},
		{map[string]string{"ASTER_LLM_PROVIDER": "bard", "ASTER_LLM_API_KEY": cliModelKey}, []string{"review", "."}, `provider "bard"`},
		{map[string]string{"ASTER_LLM_MODEL": "gpt"}, []string{"review", "."}, "no provider"},
		{map[string]string{"ASTER_LLM_PROVIDER": "openai", "ASTER_LLM_MODEL": "m", "ASTER_LLM_BASE_URL": "https://u:" + cliModelKey + "@h/v1", "ASTER_LLM_API_KEY": cliModelKey}, []string{"review", "."}, "must not carry credentials"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Run(t.Context(), c.args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: envMap(c.env)})
		if code != ExitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errb.String())
		}
		if strings.Contains(errb.String(), cliModelKey) {
			t.Errorf("the key is in an error: %q", errb.String())
		}
	}
}

// TestReviewWithModelEndToEnd runs `aster review --agentic --format json` on
// the example repository with a fake OpenAI-compatible server: the gate and
// the model's tool call run in real sandboxes; the key appears nowhere.
func TestReviewWithModelEndToEnd(t *testing.T) {
	sandboxtest.Docker(t) // skips without an engine unless ASTER_REQUIRE_DOCKER=1
	dir := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.CommandContext(t.Context(), "sh", filepath.Join(sandboxtest.RepoRoot(t), "examples", "demo-repo", "make-repo.sh"), dir).CombinedOutput(); err != nil {
		t.Fatalf("make-repo: %v\n%s", err, out)
	}
	srv := llmtest.OpenAI(t, cliModelKey,
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: modelstep.ToolRunCommand,
			Arguments: `{"argv":["python3","-c","import app.jobs, os; print('imported', sorted(k for k in os.environ))"]}`}}},
		llmtest.Reply{Text: `{"summary":"Adds a cleanup job that deletes exports.","comments":[{"path":"app/jobs.py","line":12,"end_line":null,` +
			`"quote":"return subprocess.run(\"rm -rf /srv/exports/\" + pattern, shell=True, check=False)","severity":"error",` +
			`"body":"pattern comes from the request and reaches a shell: ../../ or ; deletes anything. Pass a list and validate the name.","suggestion":null}]}`},
	)
	env := map[string]string{
		"ASTER_INIT_PATH": sandboxtest.InitBinary(t), "ASTER_IMAGES": sandboxtest.Image(),
		"ASTER_LLM_PROVIDER": "openai", "ASTER_LLM_MODEL": "gpt-test", "ASTER_LLM_BASE_URL": srv.URL, "ASTER_LLM_API_KEY": cliModelKey,
	}
	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"review", "--agentic", "--format", "json", "--base", "main", "--head", "feature", dir},
		IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: envMap(env)})
	if code != 1 { // the gate finds the committed token: failure
		t.Fatalf("exit %d\nstderr: %s", code, errb.String())
	}
	var rep review.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	m := rep.Model
	if m.Status != review.ModelOK || len(m.Comments) != 1 || m.Comments[0].Line != 13 || m.Usage.Calls != 2 {
		t.Fatalf("model = %+v", m)
	}
	if !strings.Contains(m.Note, "1 sandboxed tool call(s)") || !strings.Contains(m.Note, "secret(s) redacted") {
		t.Fatalf("note = %q", m.Note)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	// The tool really ran in a sandbox, with an environment free of secrets.
	second := string(reqs[1].Body)
	t.Logf("tool round: %.600s", second[strings.Index(second, "tool_output"):])
	if !strings.Contains(second, "imported ['HOME', 'LANG', 'PATH']") {
		t.Fatalf("tool result = %s", second)
	}
	for _, s := range []string{out.String(), errb.String(), string(reqs[0].Body), second} {
		if strings.Contains(s, cliModelKey) {
			t.Fatal("the API key leaked into the report, the logs, a prompt or a sandbox's output")
		}
		if strings.Contains(s, "ghp_R8bN2xQ7") {
			t.Fatal("the committed token reached the model or the model's output")
		}
	}
	if !strings.Contains(errb.String(), "model review by openai gpt-test") {
		t.Fatalf("stderr does not say what the model did: %s", errb.String())
	}
}

// TestReviewParallelBounds: --parallel outside 1 to MaxAnalyzerParallel is a
// usage error that says the range, before anything runs.
func TestReviewParallelBounds(t *testing.T) {
	for _, n := range []string{"0", "-1", strconv.Itoa(config.MaxAnalyzerParallel + 1)} {
		var out, errb bytes.Buffer
		code := Run(t.Context(), []string{"review", "--parallel", n, "."}, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: envMap(nil)})
		want := "--parallel " + n + ": want 1 to " + strconv.Itoa(config.MaxAnalyzerParallel)
		if code != ExitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("--parallel %s: exit %d, stderr %q, want %q", n, code, errb.String(), want)
		}
	}
}
