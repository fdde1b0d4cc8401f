package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
)

// `aster session` against a real `aster sandbox serve`: a file put in one
// command runs in the next, state stays, the command's exit status is
// aster's, and rm ends it.
func TestSessionCLI(t *testing.T) {
	needEngine(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("session-cli-token-000001\n"), 0o600)
	p := startServe(t, nil, "--token-file", tokens)
	env := map[string]string{"HOME": dir, "ASTER_SERVER": p.url, "ASTER_TOKEN_FILE": tokens}
	sess := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, env, append([]string{"session"}, args...)...)
	}

	code, out, stderr := sess("create", "--ttl", "5m", "--env", "GREETING=hi")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "s-") || !strings.Contains(stderr, "session "+id) {
		t.Fatalf("create: %d %q %q", code, out, stderr)
	}
	t.Cleanup(func() { sess("rm", id) })

	os.WriteFile(filepath.Join(dir, "main.py"), []byte("import os\nprint(os.environ['GREETING'], open('data.txt').read())\n"), 0o644)
	if code, _, stderr := sess("put", id, filepath.Join(dir, "main.py")); code != 0 {
		t.Fatalf("put: %d %s", code, stderr)
	}
	if code, out, stderr := sess("exec", id, "--", "sh", "-c", "printf kept > data.txt"); code != 0 || out != "" {
		t.Fatalf("exec: %d %q %s", code, out, stderr)
	}
	if code, out, stderr := sess("exec", id, "--", "python3", "main.py"); code != 0 || out != "hi kept\n" {
		t.Fatalf("exec of a put file: %d %q %s", code, out, stderr)
	}
	// The command's exit status is aster's; stderr passes through.
	if code, _, stderr := sess("exec", id, "--", "sh", "-c", "echo bad >&2; exit 7"); code != 7 || !strings.Contains(stderr, "bad") {
		t.Fatalf("failing exec: %d %q", code, stderr)
	}
	if code, _, stderr := sess("exec", id, "--timeout", "300ms", "--", "sleep", "5"); code != 124 || !strings.Contains(stderr, "timeout") {
		t.Fatalf("timed-out exec: %d %q", code, stderr)
	}
	if code, out, _ := sess("get", id, "data.txt", "-"); code != 0 || out != "kept" {
		t.Fatalf("get: %d %q", code, out)
	}
	if code, _, _ := sess("get", id, "data.txt", filepath.Join(dir, "copy.txt")); code != 0 {
		t.Fatalf("get to a file: %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "copy.txt")); string(b) != "kept" {
		t.Fatalf("copied file: %q", b)
	}
	code, out, _ = sess("ls", "--json", id)
	var l api.FileList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Entries) != 2 {
		t.Fatalf("ls: %d %s", code, out)
	}
	if code, out, _ := sess("list"); code != 0 || !strings.Contains(out, id) {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, _, stderr := sess("put", id, filepath.Join(dir, "main.py"), "../escape.py"); code != ExitUsage || !strings.Contains(stderr, "..") {
		t.Fatalf("put outside /work: %d %q", code, stderr)
	}
	// A local tree in and out, a snapshot, a fork, pause and resume.
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "pkg"), 0o755)
	os.WriteFile(filepath.Join(tree, "pkg", "mod.py"), []byte("X = 41\n"), 0o644)
	if code, _, stderr := sess("push", id, tree, "lib"); code != 0 || !strings.Contains(stderr, "into /work/lib") {
		t.Fatalf("push: %d %q", code, stderr)
	}
	if code, out, stderr := sess("exec", id, "--", "python3", "-c", "import sys; sys.path.insert(0, 'lib'); from pkg.mod import X; print(X + 1)"); code != 0 || out != "42\n" {
		t.Fatalf("exec over a pushed tree: %d %q %s", code, out, stderr)
	}
	if code, _, _ := sess("pull", id, "lib", filepath.Join(dir, "lib.tar")); code != 0 {
		t.Fatalf("pull: %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "lib.tar")); !bytes.Contains(b, []byte("X = 41")) {
		t.Fatalf("pulled archive lacks the file (%d bytes)", len(b))
	}
	// Docker keeps no memory of a session: the flag is refused, naming gvisor.
	if code, out, stderr := sess("snapshot", "--memory", id); code == 0 || out != "" || !strings.Contains(stderr, "gvisor") {
		t.Fatalf("snapshot --memory on docker: %d %q %q", code, out, stderr)
	}
	code, out, stderr = sess("snapshot", id)
	snap := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(snap, "snap-") {
		t.Fatalf("snapshot: %d %q %q", code, out, stderr)
	}
	code, out, _ = sess("create", "--from-snapshot", snap)
	fork := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("fork: %d", code)
	}
	t.Cleanup(func() { sess("rm", fork) })
	if code, out, _ := sess("exec", fork, "--", "cat", "data.txt", "lib/pkg/mod.py"); code != 0 || out != "keptX = 41\n" {
		t.Fatalf("fork's files: %d %q", code, out)
	}
	// A shell on a terminal, its input piped: its exit status is aster's.
	shell := func(input string) (int, string) {
		var sout, serr bytes.Buffer
		code := Run(t.Context(), []string{"session", "shell", id}, IO{Stdin: strings.NewReader(input), Stdout: &sout, Stderr: &serr, Getenv: func(k string) string { return env[k] }})
		return code, sout.String() + serr.String()
	}
	if code, out := shell("cat data.txt; echo \" shell-$((6*7))\"; tty; exit 3\n"); code != 3 || !strings.Contains(out, "kept shell-42") || !strings.Contains(out, "/dev/pts/") {
		t.Fatalf("shell: %d %q", code, out)
	}
	if code, _, stderr := sess("pause", id); code != 0 || !strings.Contains(stderr, "paused") {
		t.Fatalf("pause: %d %q", code, stderr)
	}
	if code, out, _ := sess("exec", id, "--", "cat", "data.txt"); code != 0 || out != "kept" {
		t.Fatalf("exec after pause: %d %q", code, out)
	}
	if code, _, stderr := sess("rm", id); code != 0 || !strings.Contains(stderr, "ended") {
		t.Fatalf("rm: %d %q", code, stderr)
	}
	if code, _, _ := sess("exec", id, "--", "true"); code == 0 {
		t.Fatal("exec in an ended session succeeded")
	}
	// Without a server, the error says how to name one.
	if code, _, stderr := runCLI(t, map[string]string{"HOME": dir}, "session", "list"); code != ExitUsage || !strings.Contains(stderr, "--server") {
		t.Fatalf("no server: %d %q", code, stderr)
	}
}
