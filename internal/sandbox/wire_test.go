package sandbox

import (
	"bytes"
	"strings"
	"testing"
)

func TestWireRoundTripAndEncoding(t *testing.T) {
	r := Result{ID: "r-1", Status: StatusOK, Stdout: Output{Data: []byte("text ✓")}, Stderr: Output{Data: []byte{0xff, 0, 'a'}}}
	w := r.Wire()
	if w.StdoutEncoding != EncodingUTF8 || w.StderrEncoding != EncodingBase64 {
		t.Fatalf("encodings %q %q", w.StdoutEncoding, w.StderrEncoding)
	}
	back, err := FromWire(w)
	if err != nil || !bytes.Equal(back.Stderr.Data, r.Stderr.Data) || !bytes.Equal(back.Stdout.Data, r.Stdout.Data) {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if _, err := FromWire(WireResult{Stdout: "!!", StdoutEncoding: "base64"}); err == nil {
		t.Fatal("bad base64 accepted")
	}
	if _, err := FromWire(WireResult{StdoutEncoding: "rot13"}); err == nil {
		t.Fatal("unknown encoding accepted")
	}
}

func TestExplain(t *testing.T) {
	l := Limits{TimeoutMS: 5000, MemoryBytes: 96 << 20, OutputCeilingBytes: 64 << 20}
	cases := []struct {
		r    Result
		want []string // every one must be in the sentence; nil: no sentence
	}{
		{Result{Status: StatusOK}, nil},
		{Result{Status: StatusExitNonzero, ExitCode: 3}, nil},
		{Result{Status: StatusTimeout}, []string{"5s wall-clock limit", "killed"}},
		{Result{Status: StatusOOM}, []string{"96MiB of memory", "OOM killer"}},
		{Result{Status: StatusOutputLimit}, []string{"more than 64MiB", "output_limit"}},
		{Result{Status: StatusKilled, Error: "signal KILL"}, []string{"killed: signal KILL"}},
		{Result{Status: StatusKilled}, []string{"killed by a signal"}},
		{Result{Status: StatusError, Error: "image gone"}, []string{"could not run the job: image gone"}},
	}
	for _, c := range cases {
		got := c.r.Explain(l)
		if c.want == nil {
			if got != "" {
				t.Errorf("%s: %q, want no sentence", c.r.Status, got)
			}
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.r.Status, got, w)
			}
		}
	}
}

func TestCLIExitCode(t *testing.T) {
	cases := []struct {
		r    Result
		want int
	}{
		{Result{Status: StatusOK}, 0},
		{Result{Status: StatusExitNonzero, ExitCode: 3}, 3},
		{Result{Status: StatusTimeout}, 124},
		{Result{Status: StatusOutputLimit}, 125},
		{Result{Status: StatusOOM}, 137},
		{Result{Status: StatusKilled, Signal: "SIGSEGV"}, 139},
		{Result{Status: StatusKilled}, 137},
		{Result{Status: StatusError}, 126},
	}
	for _, c := range cases {
		if got := c.r.CLIExitCode(); got != c.want {
			t.Errorf("%s/%d/%s: %d, want %d", c.r.Status, c.r.ExitCode, c.r.Signal, got, c.want)
		}
	}
}
