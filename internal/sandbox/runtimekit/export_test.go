package runtimekit_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
	"github.com/asterhq/aster/internal/workspace"
)

// hostileExport plays an init that exports the given tar stream (raw bytes,
// in frames) and then a clean result, and returns what the host made of it.
func hostileExport(t *testing.T, limits sandbox.Limits, stream []byte, end string) (sandbox.Result, []byte, error) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w := initproto.NewWriter(pw)
		for len(stream) > 0 {
			n := min(len(stream), 256<<10)
			w.WriteFrame(initproto.TypeExport, stream[:n])
			stream = stream[n:]
		}
		w.WriteFrame(initproto.TypeExportEnd, []byte(end))
		w.WriteFrame(initproto.TypeResult, []byte(`{"exit_code":0}`))
		pw.Close()
	}()
	var out bytes.Buffer
	s := &runtimekit.Session{W: discard{}, R: initproto.NewReader(pr), Destroy: func() {}, HelloSeen: true}
	j := job("true")
	j.Limits.WorkdirBytes = limits.WorkdirBytes
	j.Export = &out
	res, err := s.Run(t.Context(), j)
	return res, out.Bytes(), err
}

func tarStream(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("a"), int(h.Size)))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// An export stream is untrusted: names out of the tree, devices and sizes
// past the cap are refused with a clear error, and the run is an error.
func TestSessionExportRefusesHostileStreams(t *testing.T) {
	l := sandbox.Limits{WorkdirBytes: 1 << 20}
	cases := map[string]struct {
		stream []byte
		want   error
	}{
		"dotdot":  {tarStream(t, &tar.Header{Name: "../escape", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), workspace.ErrUnsafe},
		"abs":     {tarStream(t, &tar.Header{Name: "/etc/passwd", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), workspace.ErrUnsafe},
		"device":  {tarStream(t, &tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o644}), workspace.ErrUnsafe},
		"through": {tarStream(t, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc", Mode: 0o777}, &tar.Header{Name: "l/passwd", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), workspace.ErrUnsafe},
		"big":     {tarStream(t, &tar.Header{Name: "big", Typeflag: tar.TypeReg, Size: 2 << 20, Mode: 0o644}), workspace.ErrTooLarge},
		// Endless zero blocks after the archive: cut at the raw cap.
		"padding": {append(tarStream(t, &tar.Header{Name: "a", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), make([]byte, 400<<20)...), workspace.ErrTooLarge},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			res, _, err := hostileExport(t, l, c.stream, `{"files":1,"bytes":1}`)
			if res.Status != sandbox.StatusError || err == nil || res.Export == nil || res.Export.Error == "" || !strings.Contains(res.Export.Error, c.want.Error()) {
				t.Fatalf("status %s err %v export %+v, want %v", res.Status, err, res.Export, c.want)
			}
			if errors.Is(c.want, workspace.ErrTooLarge) != errors.Is(err, sandbox.ErrTooLarge) {
				t.Fatalf("error class of %v", err)
			}
		})
	}
}

// A clean stream reaches Export normalised; init's own export error is reported.
func TestSessionExportCleanAndFailed(t *testing.T) {
	l := sandbox.Limits{WorkdirBytes: 1 << 20}
	stream := tarStream(t, &tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}, &tar.Header{Name: "d/f", Typeflag: tar.TypeReg, Size: 3, Mode: 0o4755})
	res, out, err := hostileExport(t, l, stream, `{"files":2,"bytes":3}`)
	if err != nil || res.Status != sandbox.StatusOK || res.Export == nil || res.Export.Error != "" || res.Export.Files != 2 || res.Export.Bytes != 3 {
		t.Fatalf("status %s err %v export %+v", res.Status, err, res.Export)
	}
	tr := tar.NewReader(bytes.NewReader(out))
	tr.Next()
	h, err := tr.Next()
	if err != nil || h.Name != "d/f" || h.Mode&0o4000 != 0 {
		t.Fatalf("second entry %+v %v: want d/f without setuid", h, err)
	}
	res, _, err = hostileExport(t, l, nil, `{"error":"workspace too large: more than 1048576 bytes of files in /work"}`)
	if !errors.Is(err, sandbox.ErrTooLarge) || !strings.Contains(res.Error, "export /work: workspace too large") {
		t.Fatalf("init's error: %v, %s", err, res.Error)
	}
}

type refuseAll struct{ calls *int }

func (r refuseAll) DialEgress(context.Context, string, int) (net.Conn, error) {
	*r.calls++
	return nil, errors.New("refused")
}

// Tunnel ids must increase: an init that reuses one is a protocol error.
func TestSessionTunnelIDsIncrease(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w := initproto.NewWriter(pw)
		for _, id := range []uint32{2, 2} {
			w.WriteFrame(initproto.TypeTunnelOpen, initproto.EncodeTunnelOpen(initproto.TunnelOpen{ID: id, Port: 443, Host: "a.example"}))
		}
		w.WriteFrame(initproto.TypeResult, []byte(`{"exit_code":0}`))
		pw.Close()
	}()
	calls := 0
	s := &runtimekit.Session{W: discard{}, R: initproto.NewReader(pr), Destroy: func() {}, HelloSeen: true}
	j := job("true")
	j.Egress = refuseAll{&calls}
	res, err := s.Run(t.Context(), j)
	if !errors.Is(err, sandbox.ErrProtocol) || res.Status != sandbox.StatusError || !strings.Contains(err.Error(), "tunnel id") || calls > 1 {
		t.Fatalf("status %s err %v calls %d", res.Status, err, calls)
	}
}
