package app

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/testkit"
	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

// openGzipped gzips a tar archive into a file, as DownloadTarball leaves
// GitHub's, and opens it with openArchive.
func openGzipped(t *testing.T, archive []byte) io.ReadCloser {
	t.Helper()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(archive)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.tar.gz")
	if err := os.WriteFile(path, gz.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := openArchive(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

func TestOpenArchiveStripsTheTopDirectory(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeLink || h.Typeflag == tar.TypeXGlobalHeader {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write([]byte(body))
		}
	}
	write(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": "abc"}}, "")
	write(&tar.Header{Typeflag: tar.TypeDir, Name: "acme-widgets-abc1234/", Mode: 0o755}, "")
	write(&tar.Header{Typeflag: tar.TypeDir, Name: "acme-widgets-abc1234/src/", Mode: 0o755}, "")
	write(&tar.Header{Typeflag: tar.TypeReg, Name: "acme-widgets-abc1234/src/main.go", Mode: 0o644}, "package main\n")
	write(&tar.Header{Typeflag: tar.TypeLink, Name: "acme-widgets-abc1234/copy.go", Linkname: "acme-widgets-abc1234/src/main.go"}, "")
	tw.Close()
	var names []string
	for _, e := range workspacetest.Entries(t, openGzipped(t, buf.Bytes())) {
		names = append(names, e.Name)
		if e.Typeflag == tar.TypeLink && e.Linkname != "src/main.go" {
			t.Errorf("hard link target %q", e.Linkname)
		}
		if e.Name == "src/main.go" && e.Data != "package main\n" {
			t.Errorf("content %q", e.Data)
		}
	}
	if strings.Join(names, ",") != "src/,src/main.go,copy.go" {
		t.Fatalf("names %v", names)
	}
	// An entry outside the top directory is refused.
	var bad bytes.Buffer
	tw = tar.NewWriter(&bad)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "top/a", Size: 0})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "other/b", Size: 0})
	tw.Close()
	if _, err := io.ReadAll(openGzipped(t, bad.Bytes())); err == nil {
		t.Fatal("an archive with two top directories was accepted")
	}
}

// A sparse file in a repository archive is refused, not expanded: stripTop
// drops PAX records, so copying one would write its holes out as a regular
// file of zeros, here 1 GiB from a few kilobytes of download.
func TestOpenArchiveRefusesSparse(t *testing.T) {
	for name, bomb := range testkit.SparseBombs("acme-widgets-abc1234/bomb", 1<<30) {
		t.Run(name, func(t *testing.T) {
			n, err := io.Copy(io.Discard, openGzipped(t, bomb))
			if err == nil || !strings.Contains(err.Error(), `"acme-widgets-abc1234/bomb" is a sparse file`) {
				t.Fatalf("read %d bytes, %v; want the sparse refusal", n, err)
			}
			if n > 64<<10 {
				t.Errorf("%d bytes came through before the refusal", n)
			}
		})
	}
}

// TestStoredResult: what an attempt stores reads back whole (the report with its effective
// configuration, what was posted, the check batches), and a result stored by an Aster from
// before the report was the stored form is refused, so the head is reviewed again instead
// of being posted from nothing.
func TestStoredResult(t *testing.T) {
	old := []byte(`{"output":{"conclusion":"success","findings":[],"comments":[]},"posted":{"inline":1,"created":true},"check_batches":0}`)
	if _, err := readStored(old); err == nil {
		t.Fatal("a result without a report was accepted")
	}
	rep := review.NotReviewed("model note", "a note")
	rep.Config = review.ConfigInfo{Source: "defaults", Effective: repoconfig.Default(), Analyzers: []string{"gitleaks"}}
	rep.Findings = []gate.Marked{{Finding: finding.Finding{Path: "a.go", StartLine: 3, Severity: finding.Error, Analyzer: "x", RuleID: "r",
		Message: "m", Fingerprint: "v2:abc", CWE: []string{"CWE-78"}}, Reported: true, Classes: []gate.Class{"tests"}}}
	in := storedResult{Report: rep, Posted: &postedInfo{Posted: publish.Posted{Inline: 2, Unanchored: 1}, Created: true}, CheckBatches: 1}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readStored(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(got)
	if err != nil || string(again) != string(b) {
		t.Fatalf("the stored result does not read back whole (%v):\n%s\n%s", err, b, again)
	}
}
