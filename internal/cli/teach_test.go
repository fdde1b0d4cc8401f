package cli

// aster:env-typos (misspelt ASTER_* names on purpose)

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each refusal from a real attempt says what to do instead, exits 2 and
// starts nothing (no engine is configured for these).
func TestErrorsThatTeach(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "pkg"), 0o755)
	file := filepath.Join(dir, "f.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"exec", "python3", "-c", "print(1)"}, []string{"missing -- before the command", "aster exec [flags] -- python3 -c 'print(1)'"}},
		{[]string{"exec", "--timeout", "5s", "sh", "-c", "echo it's"}, []string{"-- sh -c 'echo it'\\''s'"}},
		{[]string{"exec", "--workdir", "nothere", "--", "true"}, []string{"--workdir nothere: /work is empty without --dir or --file"}},
		{[]string{"exec", "--workdir", "/etc", "--", "true"}, []string{"--workdir /etc: outside the workspace"}},
		{[]string{"exec", "--workdir", "../up", "--", "true"}, []string{"leaves the workspace"}},
		{[]string{"exec", "--dir", dir, "--workdir", "missing", "--", "true"}, []string{"no directory missing in --dir " + dir}},
		{[]string{"exec", "--dir", dir, "--workdir", "f.txt", "--", "true"}, []string{"not a directory"}},
		{[]string{"exec", "--file", file + ":tools/f.txt", "--workdir", "/work/other", "--", "true"}, []string{"no --file is copied under /work/other"}},
		{[]string{"exec", "--dir", filepath.Join(dir, "nope"), "--", "true"}, []string{"--dir " + filepath.Join(dir, "nope") + ": no such file or directory"}},
		{[]string{"exec", "--dir", file, "--", "true"}, []string{"--dir " + file + ": not a directory"}},
		{[]string{"exec", "--timeout", "-1", "--", "true"}, []string{"timeout", "negative", "(100ms to 6h0m0s)"}},
		{[]string{"exec", "--memory", "lots", "--", "true"}, []string{"(16MiB to 64GiB)"}},
		{[]string{"exec", "--cpus", "many", "--", "true"}, []string{`"many" is not a number`}},
		{[]string{"--log-level", "verbose", "exec", "--", "true"}, []string{"--log-level", `"verbose"`, "want debug, info, warn or error"}},
		{[]string{"--log-level", "debgu", "exec", "--", "true"}, []string{`did you mean "debug"?`}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := run(t, c.args...)
			if code != ExitUsage || stdout != "" {
				t.Fatalf("exit %d stdout %q stderr %q; want exit 2 and nothing on stdout", code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			// A path is said once: the error wraps nothing that repeats it.
			for _, a := range c.args {
				if strings.HasPrefix(a, dir) && strings.Count(stderr, a) > 1 {
					t.Errorf("%s said %d times: %q", a, strings.Count(stderr, a), stderr)
				}
			}
		})
	}
}

func TestWorkdirRel(t *testing.T) {
	for in, want := range map[string]string{"": "", "/work": "", "/work/": "", ".": "", "pkg": "pkg", "/work/pkg/sub": "pkg/sub", "pkg/./x/": "pkg/x"} {
		if got, err := workdirRel(in); err != nil || got != want {
			t.Errorf("workdirRel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/tmp", "/workx", "../x", "/work/../etc"} {
		if _, err := workdirRel(bad); err == nil {
			t.Errorf("workdirRel(%q) accepted", bad)
		}
	}
}

// With --json, a refusal is one JSON error object on stdout (the same line
// on stderr), whichever flag was refused and wherever --json stands.
func TestJSONErrors(t *testing.T) {
	for _, args := range [][]string{
		{"exec", "--json", "--bogus", "--", "true"},
		{"exec", "--bogus", "--json", "--", "true"},
		{"exec", "--json", "--timeout", "-1", "--", "true"},
		{"exec", "--json=true", "--workdir", "/etc", "--", "true"},
		{"exec", "--json", "python3", "-c", "1"},
		{"app", "history", "--json", "--limit", "x"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := run(t, args...)
			if code != ExitUsage {
				t.Fatalf("exit %d; stderr %q", code, stderr)
			}
			var je jsonError
			dec := json.NewDecoder(strings.NewReader(stdout))
			if err := dec.Decode(&je); err != nil || dec.More() {
				t.Fatalf("stdout is not one JSON object: %v %q", err, stdout)
			}
			if je.Error.Code != "usage" || je.Error.ExitCode != ExitUsage || je.Error.Message == "" || !strings.Contains(stderr, je.Error.Message) {
				t.Fatalf("error object %+v; stderr %q", je, stderr)
			}
		})
	}
	if code, stdout, _ := run(t, "exec", "--json=false", "--bogus", "--", "true"); code != ExitUsage || stdout != "" {
		t.Fatalf("--json=false: exit %d stdout %q", code, stdout)
	}
}

// Strict configuration through the CLI entry point: a typo in aster.yaml or
// in an ASTER_* name, or a bad log level, exits 2 before anything starts.
func TestStrictConfigExit2(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "aster.yaml")
	os.WriteFile(cfg, []byte("images: [aster-sandbox:latest]\nlimits:\n  memory: 1g\n  timout: 5s\n"), 0o600)
	cases := []struct {
		args    []string
		environ []string
		want    string // empty: accepted (the run then fails on the empty --workdir check)
	}{
		{[]string{"--config", cfg, "exec", "--", "true"}, nil, cfg + `:4: unknown key "limits.timout" (did you mean "limits.timeout"?)`},
		{[]string{"exec", "--", "true"}, []string{"ASTER_TIMOUT=5s"}, `unknown environment variable ASTER_TIMOUT (did you mean ASTER_TIMEOUT?)`},
		{[]string{"exec", "--", "true"}, []string{"ASTER_LOG_LEVEL=loud"}, `ASTER_LOG_LEVEL: log level "loud"`},
		{[]string{"exec", "--workdir", "x", "--", "true"}, []string{"ASTER_REQUIRE_DOCKER=1", "ASTER_TEST_IMAGE=x", "ASTER_K8S_STATE=/x", "ASTER_INIT_PATH=/x", "ASTER_LABELS=a=b", "ASTER_REAPER_ALLOWANCE=1s"}, ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(append(c.environ, c.args...), " "), func(t *testing.T) {
			env := map[string]string{}
			for _, kv := range c.environ {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			var out, errb bytes.Buffer
			code := Run(context.Background(), c.args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Getenv: func(k string) string { return env[k] }, Environ: func() []string { return c.environ }})
			if code != ExitUsage {
				t.Fatalf("exit %d; stderr %q", code, errb.String())
			}
			want := c.want
			if want == "" {
				want = "--workdir x: /work is empty"
			}
			if !strings.Contains(errb.String(), want) {
				t.Fatalf("stderr %q lacks %q", errb.String(), want)
			}
		})
	}
}

// `aster review --base nosuchref` says what git said and what to do.
func TestReviewBadBaseSaysWhy(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	git("add", "-A")
	git("commit", "-q", "-m", "one")
	code, _, stderr := run(t, "review", "--base", "nosuchref", dir)
	if code != ExitUsage || !strings.Contains(stderr, `base "nosuchref"`) || !strings.Contains(stderr, "Needed a single revision") || !strings.Contains(stderr, "fetch it") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}
