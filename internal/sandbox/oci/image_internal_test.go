package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
	"github.com/asterhq/aster/internal/testkit"
)

type entry struct {
	h    tar.Header
	body string
}

func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.h
		h.Size = int64(len(e.body))
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		h.Uid, h.Gid = os.Geteuid(), os.Getegid()
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtractRootfs(t *testing.T) {
	dir := t.TempDir()
	archive := tarOf(t,
		entry{h: tar.Header{Typeflag: tar.TypeDir, Name: "usr/", Mode: 0o755}},
		entry{h: tar.Header{Typeflag: tar.TypeDir, Name: "usr/bin/", Mode: 0o755}},
		entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "usr/bin/tool", Mode: 0o4755}, body: "#!/bin/sh\n"},
		entry{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "bin", Linkname: "usr/bin"}},
		entry{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "etc-abs", Linkname: "/etc"}},
		entry{h: tar.Header{Typeflag: tar.TypeLink, Name: "usr/bin/tool2", Linkname: "usr/bin/tool"}},
		entry{h: tar.Header{Typeflag: tar.TypeChar, Name: "dev/null", Devmajor: 1, Devminor: 3}},
		entry{h: tar.Header{Typeflag: tar.TypeDir, Name: "ro/", Mode: 0o555}},
		entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "ro/file"}, body: "x"},
	)
	st, err := extractRootfs(bytes.NewReader(archive), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 2 || st.Links != 3 || st.Skipped != 1 {
		t.Errorf("stats %+v", st)
	}
	fi, err := os.Stat(filepath.Join(dir, "usr/bin/tool"))
	if err != nil || fi.Mode()&fs.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("tool: %v %v", fi.Mode(), err)
	}
	if target, _ := os.Readlink(filepath.Join(dir, "etc-abs")); target != "/etc" {
		t.Errorf("symlink target rewritten: %q", target)
	}
	if _, err := os.Lstat(filepath.Join(dir, "dev/null")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("device node created: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "ro")); fi.Mode().Perm() != 0o555 {
		t.Errorf("directory mode %v", fi.Mode())
	}
}

// A sparse file in an image export is refused before a byte of it is
// written: archive/tar would expand its holes, here 1 GiB from a few
// kilobytes of archive (found looking into a stalled FuzzExtractRootfs).
func TestExtractRootfsRefusesSparse(t *testing.T) {
	for name, bomb := range testkit.SparseBombs("bomb", 1<<30) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := extractRootfs(bytes.NewReader(bomb), dir)
			if err == nil || !strings.Contains(err.Error(), `"bomb" is a sparse file`) {
				t.Fatalf("extractRootfs: %v, want the sparse refusal", err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "bomb")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the sparse file was written: %v", err)
			}
		})
	}
}

// TestExtractRootfsConfines feeds archives that try to write outside the
// directory: every one fails or stays inside.
func TestExtractRootfsConfines(t *testing.T) {
	outside := t.TempDir()
	sentinel := filepath.Join(outside, "planted")
	cases := map[string][]entry{
		"dotdot":             {{h: tar.Header{Typeflag: tar.TypeReg, Name: "../" + filepath.Base(outside) + "/planted"}, body: "x"}},
		"through symlink":    {{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "out", Linkname: outside}}, {h: tar.Header{Typeflag: tar.TypeReg, Name: "out/planted"}, body: "x"}},
		"through relative":   {{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "up", Linkname: "../.."}}, {h: tar.Header{Typeflag: tar.TypeReg, Name: "up/planted"}, body: "x"}},
		"hardlink out":       {{h: tar.Header{Typeflag: tar.TypeLink, Name: "h", Linkname: "../../etc/passwd"}}},
		"overwrite via link": {{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "f", Linkname: sentinel}}, {h: tar.Header{Typeflag: tar.TypeReg, Name: "f"}, body: "x"}},
	}
	for name, entries := range cases {
		dir := filepath.Join(t.TempDir(), "root")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _ = extractRootfs(bytes.NewReader(tarOf(t, entries...)), dir)
		if _, err := os.Lstat(sentinel); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: wrote %s outside the root", name, sentinel)
		}
	}
}

func FuzzExtractRootfs(f *testing.F) {
	f.Add(tarOf(f, entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "a/b"}, body: "x"}))
	f.Add(tarOf(f, entry{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/"}}, entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "l/x"}, body: "x"}))
	f.Add(tarOf(f, entry{h: tar.Header{Typeflag: tar.TypeLink, Name: "h", Linkname: "../x"}}))
	f.Fuzz(func(t *testing.T, archive []byte) {
		base := t.TempDir()
		dir := filepath.Join(base, "root")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _ = extractRootfs(bytes.NewReader(archive), dir)
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "root" {
			t.Fatalf("extraction wrote beside its root: %v", entries)
		}
	})
}

// fakeSource serves one image from a tar, and can be switched off like an
// engine that went away.
type fakeSource struct {
	archive []byte
	down    atomic.Bool
	exports atomic.Int32
	digest  atomic.Value // string; empty: sha256:abc
}

func (f *fakeSource) Resolve(_ context.Context, image string) (string, error) {
	if f.down.Load() {
		return "", fmt.Errorf("%w: engine down", sandbox.ErrUnavailable)
	}
	if image != "img:1" {
		return "", fmt.Errorf("%w: %s", sandbox.ErrUnknownImage, image)
	}
	if d, _ := f.digest.Load().(string); d != "" {
		return d, nil
	}
	return "sha256:abc", nil
}

func (f *fakeSource) Export(_ context.Context, _ string, w io.Writer) error {
	f.exports.Add(1)
	_, err := w.Write(f.archive)
	return err
}

func TestImageCacheExportsOnceAndRunsWithoutTheSource(t *testing.T) {
	src := &fakeSource{archive: tarOf(t, entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "etc/os-release"}, body: "ID=test\n"})}
	dir := t.TempDir()
	c := newImageCache(dir, src)
	ctx := t.Context()
	root, err := c.rootfs(ctx, "img:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"etc/os-release", "proc", "sys", "dev", "work", "tmp", strings.TrimPrefix(InitMountPath, "/")} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s missing from the exported root: %v", p, err)
		}
	}
	if _, err := c.rootfs(ctx, "img:1"); err != nil || src.exports.Load() != 1 {
		t.Fatalf("second use exported again (%d exports, %v)", src.exports.Load(), err)
	}
	if _, err := c.info(ctx, "nope:1"); !errors.Is(err, sandbox.ErrUnknownImage) {
		t.Fatalf("unknown image: %v", err)
	}

	// A later process, with the engine down, still resolves the exported image.
	src.down.Store(true)
	later := newImageCache(dir, src)
	info, err := later.info(ctx, "img:1")
	if err != nil || info.Digest != "sha256:abc" {
		t.Fatalf("daemonless resolve: %+v %v", info, err)
	}
	if _, err := later.info(ctx, "other:1"); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("an image never exported needs the engine: %v", err)
	}
}

func TestImageCacheRefreshesInTheBackground(t *testing.T) {
	src := &fakeSource{archive: tarOf(t, entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "x"}, body: "x"})}
	c := newImageCache(t.TempDir(), src)
	ctx := t.Context()
	if _, err := c.info(ctx, "img:1"); err != nil {
		t.Fatal(err)
	}
	// Age the entry, take the engine away: the known digest is answered at
	// once, and the failed refresh keeps it.
	c.mu.Lock()
	e := c.byName["img:1"]
	e.at = e.at.Add(-2 * resolveTTL)
	c.byName["img:1"] = e
	c.mu.Unlock()
	src.down.Store(true)
	if info, err := c.info(ctx, "img:1"); err != nil || info.Digest != "sha256:abc" {
		t.Fatalf("stale answer: %+v %v", info, err)
	}
	for {
		c.mu.Lock()
		busy := c.refreshing["img:1"]
		_, known := c.byName["img:1"]
		c.mu.Unlock()
		if !busy {
			if !known {
				t.Fatal("an unreachable engine made the image unknown")
			}
			break
		}
	}
}

// A rebuilt image leaves its old tree behind only while something may still
// use it: once no name in the index points to it and no run marked it used
// for runtimekit.CacheUnusedFor, the next export removes it.
func TestImageCachePrunesTreesOfOldDigests(t *testing.T) {
	src := &fakeSource{archive: tarOf(t, entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "x"}, body: "x"})}
	dir := t.TempDir()
	c := newImageCache(dir, src)
	ctx := t.Context()
	old := time.Now().Add(-2 * runtimekit.CacheUnusedFor)
	age := func(digest string) {
		t.Helper()
		if err := os.Chtimes(c.rootfsPath(digest), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.rootfs(ctx, "img:1"); err != nil { // sha256:abc
		t.Fatal(err)
	}
	// Another image name whose tree is old but still the name's current one.
	if err := os.MkdirAll(c.rootfsPath("sha256:other"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.writeIndex("other:1", "sha256:other"); err != nil {
		t.Fatal(err)
	}
	// A tree no name points to, but used recently.
	if err := os.MkdirAll(c.rootfsPath("sha256:recent"), 0o755); err != nil {
		t.Fatal(err)
	}
	age("sha256:abc")
	age("sha256:other")

	// img:1 is rebuilt: a new digest, exported on the next run.
	src.digest.Store("sha256:def")
	c.mu.Lock()
	delete(c.byName, "img:1")
	c.mu.Unlock()
	root, err := c.rootfs(ctx, "img:1")
	if err != nil || root != c.rootfsPath("sha256:def") {
		t.Fatalf("rebuilt image: %s %v", root, err)
	}
	if _, err := os.Stat(c.rootfsPath("sha256:abc")); !os.IsNotExist(err) {
		t.Errorf("the old digest's tree is still there (%v)", err)
	}
	for _, d := range []string{"sha256:def", "sha256:other", "sha256:recent"} {
		if _, err := os.Stat(c.rootfsPath(d)); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// slowSource writes its archive in pieces with a pause between them.
type slowSource struct {
	fakeSource
	pause time.Duration
}

func (s *slowSource) Export(ctx context.Context, image string, w io.Writer) error {
	for chunk := range slices.Chunk(s.archive, 512) {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		time.Sleep(s.pause)
	}
	return nil
}

// An export says it started, how far it got while it runs, and when it ended: the first
// run of an image is not a silent minute.
func TestImageExportShowsProgress(t *testing.T) {
	defer func(d time.Duration) { exportProgressEvery = d }(exportProgressEvery)
	exportProgressEvery = 5 * time.Millisecond
	src := &slowSource{pause: 20 * time.Millisecond}
	src.archive = tarOf(t, entry{h: tar.Header{Typeflag: tar.TypeReg, Name: "big"}, body: strings.Repeat("x", 8<<10)})
	var logs testkit.SyncBuffer
	c := newImageCache(t.TempDir(), src)
	c.log = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := c.rootfs(t.Context(), "img:1"); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{"exporting the image for this runtime", "mb_so_far=", "image exported"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "image exported") < strings.LastIndex(out, "mb_so_far=") {
		t.Errorf("progress after the end:\n%s", out)
	}
}
