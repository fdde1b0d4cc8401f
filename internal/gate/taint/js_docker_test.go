package taint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/gate/taint"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestJSFixturesInImage runs the built-in taint-js analyzer, as the gate
// runs it, in the real image on Docker over every JavaScript, TypeScript,
// EJS and Handlebars fixture of testdata/js: each marked sink is found on
// its line with a flow from its source, and nothing else is reported.
func TestJSFixturesInImage(t *testing.T) {
	files, want := fixtures(t, "js")
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	a, ok := gate.Lookup(gate.Builtins(), gate.TaintJS)
	if !ok {
		t.Fatal("no taint-js analyzer")
	}
	res := gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()}).Run(context.Background(),
		gate.Request{Snapshot: snapshot(t, files), Analyzers: []gate.Analyzer{a}})
	ar := res.Analyzers[0]
	if ar.Status != gate.StatusOK {
		t.Fatalf("analyzer %+v", ar)
	}
	if ar.Stats == nil || ar.Stats.Files < 40 || ar.Stats.MaxRSSKB <= 0 {
		t.Errorf("stats %+v", ar.Stats)
	}
	for _, n := range ar.Notices {
		t.Errorf("notice on the fixtures: %+v", n)
	}
	checkFixtures(t, res.Findings, want)
}

// sarifLog is the part of the engine's own SARIF the tests below read.
type sarifLog struct {
	Runs []struct {
		Invocations []struct {
			Notifications []struct {
				Level   string `json:"level"`
				Message struct {
					Text string `json:"text"`
				} `json:"message"`
			} `json:"toolExecutionNotifications"`
		} `json:"invocations"`
		Results []json.RawMessage `json:"results"`
	} `json:"runs"`
}

// runEngine runs the taint-js analyzer's command, with extra engine options,
// on files of a snapshot in the image, and returns its SARIF.
func runEngine(t *testing.T, mgr *sandbox.Manager, files map[string][]byte, targets []string, opts ...string) sarifLog {
	t.Helper()
	a, _ := gate.Lookup(gate.Builtins(), gate.TaintJS)
	eng, err := taint.Tar(taint.JS, targets)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := snapshot(t, files).Open()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := mgr.Run(context.Background(), sandbox.Spec{
		Image: sandboxtest.Image(), Argv: append(slices.Clone(a.Command), opts...), Env: map[string]string{"HOME": "/tmp"},
		Stdin: bytes.NewReader(eng), Workspace: sandbox.Workspace{Tar: tr, Filtered: true},
		Limits: sandbox.Limits{TimeoutMS: 300000, MemoryBytes: 1536 << 20, OutputBytes: 32 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK || res.ExitCode != 0 {
		t.Fatalf("engine: status %s exit %d: %s", res.Status, res.ExitCode, res.Stderr.Data)
	}
	var log sarifLog
	if err := json.Unmarshal(res.Stdout.Data, &log); err != nil {
		t.Fatalf("engine output: %v: %.300s", err, res.Stdout.Data)
	}
	if len(log.Runs) != 1 || len(log.Runs[0].Invocations) != 1 {
		t.Fatalf("engine output: %d runs", len(log.Runs))
	}
	return log
}

// TestJSEngineLimitsInImage gives the engine files it must not stall on: a
// 1 MB expression, deep nesting, a walk past its step budget (a budget in
// steps is the same on every machine; the time budget ends a walk the same
// way), and minified code. Each is skipped and named, and the ordinary file
// beside them is still analysed.
func TestJSEngineLimitsInImage(t *testing.T) {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	var big, long, min strings.Builder
	big.WriteString("x = a")
	for big.Len() < 1<<20 {
		big.WriteString(" +\n a")
	}
	big.WriteString(";\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&long, "f%d(req.query.a);\n", i%50)
	}
	for i := 0; i < 60; i++ {
		min.WriteString(strings.Repeat("var a=function(b,c){return b+c};", 40) + "\n")
	}
	files := map[string][]byte{
		"big.js":  []byte(big.String()),
		"deep.js": []byte("x = " + strings.Repeat("(\n", 30000) + "1" + strings.Repeat("\n)", 30000) + ";\n"),
		"long.js": []byte(long.String()),
		"lib.js":  []byte(min.String()),
		"ok.js":   []byte("const { exec } = require('child_process');\nmodule.exports = (req, res) => exec(req.query.x);\n"),
	}
	log := runEngine(t, mgr, files, []string{"big.js", "deep.js", "lib.js", "long.js", "ok.js"}, "--file-budget-steps", "2000")
	var notes []string
	for _, n := range log.Runs[0].Invocations[0].Notifications {
		notes = append(notes, n.Level+" "+n.Message.Text)
	}
	want := []string{
		"warning taint: big.js skipped: nested too deeply to analyse",
		"warning taint: deep.js skipped: nested too deeply to analyse",
		"warning taint: lib.js skipped: minified (average line 1281 bytes)",
		"warning taint: long.js skipped: over the per-file budget (5000 ms, 2000 steps)",
	}
	if !slices.Equal(notes, want) {
		t.Errorf("notifications:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
	var res []struct {
		RuleID    string `json:"ruleId"`
		Locations []struct {
			PhysicalLocation struct {
				ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
				Region           struct{ StartLine int } `json:"region"`
			} `json:"physicalLocation"`
		} `json:"locations"`
	}
	for _, r := range log.Runs[0].Results {
		var x struct {
			RuleID    string `json:"ruleId"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
					Region           struct{ StartLine int } `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
		}
		if err := json.Unmarshal(r, &x); err != nil {
			t.Fatal(err)
		}
		res = append(res, x)
	}
	if len(res) != 1 || res[0].RuleID != "aster.taint.command-injection" {
		t.Fatalf("results %+v, want the one in ok.js", res)
	}
	if l := res[0].Locations[0].PhysicalLocation; l.ArtifactLocation.URI != "ok.js" || l.Region.StartLine != 2 {
		t.Errorf("finding at %+v, want ok.js:2", l)
	}
}

// TestJSEngineDeterministic runs the engine twice over the fixtures: the
// results are the same, byte for byte.
func TestJSEngineDeterministic(t *testing.T) {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	files, _ := fixtures(t, "js")
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	a, err := json.Marshal(runEngine(t, mgr, files, names).Runs[0].Results)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(runEngine(t, mgr, files, names).Runs[0].Results)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < 1000 || !bytes.Equal(a, b) {
		t.Errorf("two runs differ (or found nothing):\n%.2000s\n%.2000s", a, b)
	}
}

// TestJSJudgedInImage: taint-js, run as the gate runs it, names the sinks it
// judged whether it reported them or not — a query of constant text, a
// fetch to a fixed host, an fs call that opens nothing by path — a
// module it reached through a require from another target included, and
// not the lines of a callback's body nor lines with no sink.
func TestJSJudgedInImage(t *testing.T) {
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	files := map[string][]byte{
		"app.js": []byte(`const express = require("express");
const db = require("./db");
const app = express();
app.get("/a", (req, res) => db.count(req, res));
`),
		"db.js": []byte(`const fs = require("fs");
const axios = require("axios");
const mysql = require("mysql");
const pool = mysql.createPool({});
exports.count = (req, res) => {
  pool.query("SELECT count(*) AS n FROM items", (err, rows) => {
    const where = fs.realpathSync("/srv/data");
    res.json({ n: rows[0].n, where });
  });
  axios.get("https://api.example.org/v1/" + encodeURIComponent(req.query.id));
};
`),
	}
	a, _ := gate.Lookup(gate.Builtins(), gate.TaintJS)
	res := gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()}).Run(context.Background(),
		gate.Request{Snapshot: snapshot(t, files), Analyzers: []gate.Analyzer{a}})
	ar := res.Analyzers[0]
	if ar.Status != gate.StatusOK {
		t.Fatalf("analyzer %+v", ar)
	}
	for _, c := range []struct {
		line int
		cat  string
		want bool
	}{
		{6, "sql-injection", true}, {7, "sql-injection", false}, {8, "sql-injection", false},
		{7, "path-traversal", true}, {10, "ssrf", true}, {5, "sql-injection", false},
	} {
		if got, _ := ar.Judged.Has("db.js", c.line, c.line, c.cat); got != c.want {
			t.Errorf("db.js:%d %s judged %v, want %v (judged %v)", c.line, c.cat, got, c.want, ar.Judged["db.js"])
		}
	}
	if len(res.Findings) != 0 {
		t.Errorf("findings %+v", res.Findings)
	}
}
