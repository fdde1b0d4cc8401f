package taint_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate/taint"
)

// hostPython runs the Python engine with the host's python3 over dir, as the
// analyzer runs it in the sandbox, and reads its SARIF.
func hostPython(t *testing.T, dir string, args ...string) finding.ReadResult {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on this host (the image test runs the engine)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append([]string{"-I", "-B", filepath.Join("engine", "python", "main.py"), "--root", dir}, args...)
	cmd := exec.CommandContext(ctx, py, argv...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("engine: %v\n%s", err, stderr.String())
	}
	res, err := finding.ReadSARIF(&out, finding.ReadOptions{Analyzer: "taint-python", Root: dir})
	if err != nil {
		t.Fatalf("engine output: %v", err)
	}
	return res
}

// TestPythonFixturesHost runs the engine on the host's python3 over the
// fixtures: a quick check while editing; TestPythonFixturesInImage is the
// one that counts.
func TestPythonFixturesHost(t *testing.T) {
	_, want := fixtures(t, "python")
	res := hostPython(t, filepath.Join("testdata", "python"))
	checkFixtures(t, res.Findings, want)
}

// TestPythonBudget: a file over the per-file budget, and one nested past what
// Python parses, are left out and named, and the other files are still
// analysed.
func TestPythonBudget(t *testing.T) {
	dir := t.TempDir()
	var big strings.Builder
	for i := 0; i < 3000; i++ {
		big.WriteString("def f" + strconv.Itoa(i) + "(a):\n    b = a + '" + strconv.Itoa(i) + "'\n    return b\n\n")
	}
	files := map[string]string{
		"slow.py": big.String(),
		"deep.py": "x = " + strings.Repeat("1 + ", 200000) + "1\n",
		"ok.py":   "import os\nfrom flask import request\n\n\ndef f():\n    os.system(request.args['c'])\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := hostPython(t, dir, "--file-budget-ms", "1")
	notes := map[string]string{}
	for _, n := range res.Notices {
		notes[n.Path] = n.Text
	}
	if !strings.Contains(notes["slow.py"], "over the per-file budget (1 ms)") {
		t.Errorf("slow.py: %q", notes["slow.py"])
	}
	if !strings.Contains(notes["deep.py"], "deep.py skipped") {
		t.Errorf("deep.py: %q", notes["deep.py"])
	}
	if len(res.Findings) != 1 || res.Findings[0].Path != "ok.py" || res.Findings[0].StartLine != 6 {
		t.Errorf("findings %+v", res.Findings)
	}
	if res.Stats == nil || res.Stats.Files < 1 || res.Stats.MaxRSSKB <= 0 {
		t.Errorf("stats %+v", res.Stats)
	}
}

// TestPythonRunBudget: a run whose CPU budget is spent before the report
// pass reaches a file names that file and counts the files not reached in its
// first notice, and still exits with SARIF; without the budget the same tree
// gives its finding.
func TestPythonRunBudget(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.py": "import os\nfrom flask import request\n\n\ndef f():\n    os.system(request.args['c'])\n",
		"b.py": "def g(x):\n    return x\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res := hostPython(t, dir); len(res.Findings) != 1 || len(res.Notices) != 0 {
		t.Fatalf("without a run budget: findings %+v, notices %+v", res.Findings, res.Notices)
	}
	// the interpreter's own start costs more than 1 ms of CPU
	res := hostPython(t, dir, "--run-budget-ms", "1")
	if len(res.Findings) != 0 {
		t.Errorf("findings in files not reached: %+v", res.Findings)
	}
	if len(res.Notices) != 3 || res.Notices[0].Path != "a.py" || !strings.Contains(res.Notices[0].Text, "2 files not reached, from a.py on: the run's CPU budget (0.001 s) was spent") {
		t.Fatalf("notices %+v", res.Notices)
	}
	for i, name := range []string{"a.py", "b.py"} {
		n := res.Notices[i+1]
		if n.Path != name || !strings.Contains(n.Text, "not reached") {
			t.Errorf("notice %d: %+v", i+1, n)
		}
	}
}

// TestPythonRunDeadline: the same with the run's wall-clock deadline, which
// 200 files cannot meet in 1 ms.
func TestPythonRunDeadline(t *testing.T) {
	dir := t.TempDir()
	for i := range 200 {
		body := "def g" + strconv.Itoa(i) + "(x):\n    return x\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%03d.py", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := hostPython(t, dir, "--run-deadline-ms", "1")
	if len(res.Notices) < 2 || !strings.Contains(res.Notices[0].Text, "files not reached, from ") ||
		!strings.HasSuffix(res.Notices[0].Text, ": the run's time (0.001 s) was spent") {
		t.Fatalf("notices %+v", res.Notices)
	}
	if res.Notices[0].Path != res.Notices[1].Path || !strings.Contains(res.Notices[1].Text, "skipped: not reached") {
		t.Errorf("the first file not reached is not named: %+v", res.Notices[:2])
	}
}

// TestTar: the tar carries the engine under its name and the target list,
// NUL-separated; a target with a NUL is refused.
func TestTar(t *testing.T) {
	b, err := taint.Tar(taint.Python, []string{"a.py", "dir/b c.py"})
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	names := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		names[h.Name] = string(data)
	}
	if names[taint.TargetsFile] != "a.py\x00dir/b c.py\x00" {
		t.Errorf("targets %q", names[taint.TargetsFile])
	}
	for _, want := range []string{"python/main.py", "python/aster_flow.py", "python/aster_rules.py"} {
		if _, ok := names[want]; !ok {
			t.Errorf("no %s in %v", want, names)
		}
	}
	if _, err := taint.Tar(taint.Python, []string{"a\x00b"}); err == nil {
		t.Error("a NUL in a target was accepted")
	}
	if _, err := taint.Tar("cobol", nil); err == nil {
		t.Error("an unknown engine was packed")
	}
}

// TestPythonJudged: the engine names the sinks it judged, flagged or not —
// the call's lines and the lines its SQL text was built on — and marks the
// calls it judged safe by their own arguments (a safe YAML loader, a
// constant document); a yaml.load of a file whose path the program was given (an upload
// read back) is judged for want of a source only.
func TestPythonJudged(t *testing.T) {
	dir := t.TempDir()
	src := `import os
import pickle
import subprocess
import yaml
from flask import request
from sqlalchemy import text


def view(db):
    q = "SELECT name FROM t WHERE id = %s" % "7"
    db.execute(q)
    yaml.load(request.data, Loader=yaml.SafeLoader)
    doc = "a: 1"
    yaml.load(doc)
    yaml.load(open(db.upload_path).read())
    pickle.loads(request.data)


def lookup(db, name):
    q = "SELECT * FROM users WHERE name = '%s'" % name
    return db.execute(text(q))


def _page(cmd):
    subprocess.call(cmd + " notes.txt", shell=True)


def show():
    _page(os.environ.get("PAGER", "less"))
`
	if err := os.WriteFile(filepath.Join(dir, "app.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	res := hostPython(t, dir)
	// lookup's sink takes its parameter: the verdict is its callers', and
	// a caller may be out of sight (a framework's handler), so no judgement
	if ok, _ := res.Judged.Has("app.py", 20, 21, "sql-injection"); ok {
		t.Errorf("a sink fed by a parameter judged: %+v", res.Judged["app.py"])
	}
	// _page's sink is judged where its caller gave the verdict ($PAGER names
	// the program to run): a private helper's callers are in sight
	if ok, _ := res.Judged.Has("app.py", 25, 25, "command-injection"); !ok {
		t.Errorf("a sink whose caller passes clean data not judged: %+v", res.Judged["app.py"])
	}
	for _, f := range res.Findings {
		if f.RuleID == "aster.taint.command-injection" {
			t.Errorf("$PAGER run as the pager reported: %+v", f)
		}
	}
	for _, c := range []struct {
		line   int
		cat    string
		byCall bool
	}{
		{10, "sql-injection", false}, {11, "sql-injection", false},
		{12, "insecure-deserialization", true}, {14, "insecure-deserialization", true},
		{15, "insecure-deserialization", false}, {16, "insecure-deserialization", false},
	} {
		ok, byCall := res.Judged.Has("app.py", c.line, c.line, c.cat)
		if !ok || byCall != c.byCall {
			t.Errorf("line %d %s: judged %v, by the call %v", c.line, c.cat, ok, byCall)
		}
	}
	if ok, _ := res.Judged.Has("app.py", 1, 9, "sql-injection"); ok {
		t.Errorf("judged lines no sink is on: %+v", res.Judged)
	}
}

// TestPythonJudgedLoaders: ruamel's round-trip and safe loaders and a pickle
// of the program's own constant-named file are judged safe by the call;
// ruamel's unsafe loader of request data and a file the request names are
// reported, never judged safe by the call.
func TestPythonJudgedLoaders(t *testing.T) {
	dir := t.TempDir()
	src := `import pickle

from flask import request
from ruamel.yaml import YAML


def view():
    rt = YAML()
    rt.load(request.data)
    safe = YAML(typ="safe")
    safe.load(request.data)
    pickle.load(open("./cache/index.dat", "rb"))
    pickle.load(open(request.args["f"], "rb"))
    raw = YAML(typ="unsafe")
    return raw.load(request.data)
`
	if err := os.WriteFile(filepath.Join(dir, "app.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	res := hostPython(t, dir)
	for _, c := range []struct {
		line   int
		byCall bool
	}{{9, true}, {11, true}, {12, true}, {13, false}, {15, false}} {
		ok, byCall := res.Judged.Has("app.py", c.line, c.line, "insecure-deserialization")
		if !ok || byCall != c.byCall {
			t.Errorf("line %d: judged %v, by the call %v", c.line, ok, byCall)
		}
	}
	var lines []int
	for _, f := range res.Findings {
		lines = append(lines, f.StartLine)
	}
	if !slices.Equal(lines, []int{13, 15}) {
		t.Errorf("findings on lines %v, want [13 15] (the file the request names, the unsafe loader)", lines)
	}
}
