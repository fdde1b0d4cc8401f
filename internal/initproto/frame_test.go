package initproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	big := bytes.Repeat([]byte("z"), MaxPayload+10)
	for _, f := range []Frame{{TypeJob, []byte(`{"a":1}`)}, {TypeTarEnd, nil}, {TypeStdout, big}} {
		if err := w.WriteFrame(f.Type, f.Payload); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(&buf)
	want := []Frame{{TypeJob, []byte(`{"a":1}`)}, {TypeTarEnd, []byte{}}, {TypeStdout, big[:MaxPayload]}, {TypeStdout, big[MaxPayload:]}}
	for i, w := range want {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Type != w.Type || !bytes.Equal(f.Payload, w.Payload) {
			t.Fatalf("frame %d: got %s/%d bytes, want %s/%d", i, f.Type, len(f.Payload), w.Type, len(w.Payload))
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
}

func TestReaderRejectsBadFrames(t *testing.T) {
	hdr := func(t byte, n uint32) []byte {
		b := []byte{t, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], n)
		return b
	}
	cases := map[string]struct {
		in   []byte
		want error
	}{
		"oversize":     {hdr('O', MaxPayload+1), ErrFrame},
		"huge":         {hdr('O', 0xffffffff), ErrFrame},
		"unknown type": {hdr('Z', 1), ErrFrame},
		"cut payload":  {append(hdr('O', 10), 'a', 'b'), io.ErrUnexpectedEOF},
		"cut header":   {[]byte{'O', 0, 0}, io.ErrUnexpectedEOF},
		"zero type":    {hdr(0, 0), ErrFrame},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(c.in)).Next()
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestDecodeResultRanges(t *testing.T) {
	good := `{"exit_code":3,"signal":0,"cpu_time_ms":5,"peak_rss_bytes":100,"stdout_bytes":1,"stderr_bytes":2}`
	if r, err := DecodeResult([]byte(good)); err != nil || r.ExitCode != 3 {
		t.Fatalf("good result: %v %+v", err, r)
	}
	for _, bad := range []string{
		`{"exit_code":256}`, `{"exit_code":-2}`, `{"signal":65}`, `{"cpu_time_ms":-1}`,
		`{"output_limit":"stdin"}`, `not json`, `{"peak_rss_bytes":-5}`,
	} {
		if _, err := DecodeResult([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	long := `{"setup_error":"` + strings.Repeat("é", MaxErrorText) + `"}`
	r, err := DecodeResult([]byte(long))
	if err != nil || len(r.SetupError) > MaxErrorText+4 {
		t.Fatalf("long setup error not capped: %v len=%d", err, len(r.SetupError))
	}
}

func TestJobHeaderValidate(t *testing.T) {
	ok := JobHeader{Version: Version, Argv: []string{"true"}, Dir: ".", TimeoutMS: 1, OutputCeilingBytes: 1, Env: []string{"A=b"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	mut := []func(h *JobHeader){
		func(h *JobHeader) { h.Version = 99 },
		func(h *JobHeader) { h.Argv = nil },
		func(h *JobHeader) { h.Argv = []string{""} },
		func(h *JobHeader) { h.Argv = []string{"a\x00b"} },
		func(h *JobHeader) { h.Env = []string{"NOEQUALS"} },
		func(h *JobHeader) { h.Env = []string{"=v"} },
		func(h *JobHeader) { h.Dir = "/work" },
		func(h *JobHeader) { h.Dir = "a/../../x" },
		func(h *JobHeader) { h.Dir = "" },
		func(h *JobHeader) { h.TimeoutMS = 0 },
		func(h *JobHeader) { h.Argv = []string{strings.Repeat("a", MaxArgBytes+1)} },
		func(h *JobHeader) { h.Argv = make([]string, MaxArgs+1); h.Argv[0] = "x" },
	}
	for i, m := range mut {
		h := ok
		h.Argv = append([]string(nil), ok.Argv...)
		m(&h)
		if err := h.Validate(); err == nil {
			t.Errorf("mutation %d accepted", i)
		}
	}
}

// FuzzReader: any byte stream yields frames or an error, never a panic, and
// never a payload over MaxPayload.
func FuzzReader(f *testing.F) {
	var seed bytes.Buffer
	w := NewWriter(&seed)
	_ = w.WriteFrame(TypeHello, []byte(`{"version":1}`))
	_ = w.WriteFrame(TypeStdout, []byte("hello"))
	_ = w.WriteFrame(TypeResult, []byte(`{"exit_code":0}`))
	f.Add(seed.Bytes())
	f.Add([]byte{'O', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for i := 0; i < 1000; i++ {
			fr, err := r.Next()
			if err != nil {
				return
			}
			if len(fr.Payload) > MaxPayload {
				t.Fatalf("payload of %d bytes", len(fr.Payload))
			}
			if fr.Type == TypeResult {
				_, _ = DecodeResult(fr.Payload)
			}
			if fr.Type == TypeHello {
				_, _ = DecodeHello(fr.Payload)
			}
		}
	})
}

// FuzzDecodeResult: accepted results are always in range.
func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(`{"exit_code":0,"signal":9,"oom_kills":1}`))
	f.Add([]byte(`{"exit_code":-1,"output_limit":"stdout"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeResult(data)
		if err != nil {
			return
		}
		if r.ExitCode < -1 || r.ExitCode > 255 || r.Signal < 0 || r.Signal > 64 || r.CPUTimeMS < 0 || r.OOMKills < 0 {
			t.Fatalf("out-of-range result accepted: %+v", r)
		}
	})
}
