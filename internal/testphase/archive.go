package testphase

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/workspace"
)

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

// errStreamEnded ends a layered workspace's stream once its run is over.
var errStreamEnded = errors.New("the run ended")

// layered is a phase's workspace: the repository with a layer on top (the
// dependencies, or the CA bundle), streamed to the sandbox as it is made
// instead of written to a file first, so it costs the host no disk. A first
// pass through the workspace filter, to nowhere, refuses a workspace that
// cannot be sent (too large, unsafe) before any sandbox starts; both passes
// read the same archives, which nothing changes meanwhile. Once the run is
// over, stop ends the stream (a run that never read it included) and waits
// for it.
func layered(open func() (io.ReadCloser, error), layer func() io.Reader, strip []string, maxBytes int64) (r io.Reader, stop func(), err error) {
	check, done := layerPipe(open, layer, strip)
	_, err = workspace.Filter(check, io.Discard, workspace.Caps{MaxBytes: maxBytes})
	check.CloseWithError(errStreamEnded)
	<-done
	if err != nil {
		return nil, nil, err
	}
	pr, done := layerPipe(open, layer, strip)
	return pr, func() { pr.CloseWithError(errStreamEnded); <-done }, nil
}

// layerPipe writes the repository and its layer as one archive into a pipe
// from a goroutine of its own, which ends (done) when the archive is written
// or the reader is closed.
func layerPipe(open func() (io.ReadCloser, error), layer func() io.Reader, strip []string) (*io.PipeReader, <-chan struct{}) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		repo, err := open()
		if err != nil {
			pw.CloseWithError(fmt.Errorf("open the repository: %w", err))
			return
		}
		defer repo.Close()
		pw.CloseWithError(overlay(pw, repo, layer(), strip))
	}()
	return pr, done
}
