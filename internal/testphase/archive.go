package testphase

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/workspace"
)

// maxManifestBytes bounds the bytes of one manifest hashed for a cache key;
// past it the size and the first bytes decide.
const maxManifestBytes = 64 << 20

// hashManifests returns name → SHA-256 of each of the manifests present in
// the repository's archive (names relative to the working directory).
func hashManifests(r io.Reader, workdir string, manifests []string) (map[string]string, error) {
	want := map[string]string{}
	for _, m := range manifests {
		want[path.Join(workdir, m)] = m
	}
	out := map[string]string{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read repository archive: %w", err)
		}
		name, ok := want[strings.TrimSuffix(path.Clean(hdr.Name), "/")]
		if !ok || hdr.Typeflag != tar.TypeReg {
			continue
		}
		h := sha256.New()
		fmt.Fprintf(h, "%d\n", hdr.Size)
		if _, err := io.Copy(h, io.LimitReader(tr, maxManifestBytes)); err != nil {
			return nil, fmt.Errorf("read %s: %w", workspace.Quote(hdr.Name), err)
		}
		out[name] = hex.EncodeToString(h.Sum(nil))
	}
}

// depPrefixes are the dependency directories of a working directory, as
// archive names.
func depPrefixes(workdir string) []string {
	var out []string
	for _, d := range testrun.DepDirs {
		out = append(out, path.Join(workdir, d))
	}
	return out
}

func underAny(name string, prefixes []string) bool {
	name = strings.TrimSuffix(name, "/")
	return slices.ContainsFunc(prefixes, func(p string) bool { return name == p || strings.HasPrefix(name, p+"/") })
}

// extractDeps reads the install phase's export (untrusted: it passes the
// workspace filter first) and writes to w an archive of only the dependency
// directories of workdir. A hard link to a file outside them is dropped.
// It returns the entries written.
func extractDeps(export io.Reader, w io.Writer, workdir string, caps workspace.Caps) (int, error) {
	pr, pw := io.Pipe()
	go func() {
		_, err := workspace.Filter(export, pw, caps)
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	prefixes := depPrefixes(workdir)
	tr := tar.NewReader(pr)
	tw := tar.NewWriter(w)
	kept := map[string]bool{}
	n := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("workspace export: %w", err)
		}
		if !underAny(hdr.Name, prefixes) {
			continue
		}
		if hdr.Typeflag == tar.TypeLink && !kept[hdr.Linkname] {
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return n, err
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, tr); err != nil {
				return n, fmt.Errorf("workspace export: %w", err)
			}
			kept[hdr.Name] = true
		}
		n++
	}
	return n, tw.Close()
}

// overlay writes the repository's archive without anything under the
// prefixes (the dependency directories), then the dependencies' archive, as
// one stream for the workspace filter (the caller filters it: deps is
// untrusted).
func overlay(w io.Writer, repo, deps io.Reader, prefixes []string) error {
	tw := tar.NewWriter(w)
	for i, r := range []io.Reader{repo, deps} {
		if r == nil {
			continue
		}
		tr := tar.NewReader(r)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("read archive: %w", err)
			}
			if i == 0 && underAny(path.Clean(hdr.Name), prefixes) {
				continue // the repository's own copy gives way to the installed one
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeReg {
				if _, err := io.Copy(tw, tr); err != nil {
					return fmt.Errorf("read archive: %w", err)
				}
			}
		}
	}
	return tw.Close()
}

// cappedWriter fails a write past max bytes, so an export cannot fill the
// host's disk.
type cappedWriter struct {
	w   io.Writer
	n   int64
	max int64
}

var errExportTooLarge = errors.New("workspace export larger than its cap")

func (c *cappedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > c.max-c.n {
		return 0, fmt.Errorf("%w (%d bytes)", errExportTooLarge, c.max)
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
