package evidence

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// checkOverlay refuses evidence files that would land on a directory of
// the tree or under one of its links or files: a link could carry a write
// to a protected name.
func checkOverlay(open func() (io.ReadCloser, error), files map[string]string) error {
	src, err := open()
	if err != nil {
		return fmt.Errorf("open the snapshot: %w", err)
	}
	defer src.Close()
	tr := tar.NewReader(src)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the snapshot: %w", err)
		}
		name := entryName(h.Name)
		for p := range files {
			switch {
			case h.Typeflag == tar.TypeDir && p == name:
				return fmt.Errorf("%w: %s is a directory of the repository", ErrInvalid, p)
			case h.Typeflag != tar.TypeDir && strings.HasPrefix(p, name+"/"):
				return fmt.Errorf("%w: %s is under %s, which is not a directory in the repository", ErrInvalid, p, name)
			}
		}
	}
}

// overlay returns an opener of the snapshot with the evidence files written
// over it: an entry of the same name is replaced, missing parents are
// added. It streams; nothing lands on the host's disk.
func overlay(open func() (io.ReadCloser, error), files map[string]string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		src, err := open()
		if err != nil {
			return nil, err
		}
		pr, pw := io.Pipe()
		go func() {
			defer src.Close()
			pw.CloseWithError(writeOverlay(pw, src, files))
		}()
		return pr, nil
	}
}

func writeOverlay(w io.Writer, src io.Reader, files map[string]string) error {
	tr := tar.NewReader(src)
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the snapshot: %w", err)
		}
		name := entryName(h.Name)
		if _, replaced := files[name]; replaced {
			continue
		}
		if h.Typeflag == tar.TypeDir {
			dirs[name] = true
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("write the workspace: %w", err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("write the workspace: %w", err)
		}
	}
	mtime := time.Unix(0, 0)
	ev := &Evidence{Files: files}
	for _, p := range ev.Paths() {
		var parents []string
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			dirs[parents[i]] = true
			if err := tw.WriteHeader(&tar.Header{Name: parents[i] + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
				return fmt.Errorf("write the workspace: %w", err)
			}
		}
		body := files[p]
		if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return fmt.Errorf("write the workspace: %w", err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return fmt.Errorf("write the workspace: %w", err)
		}
	}
	return tw.Close()
}

func entryName(n string) string {
	return strings.TrimSuffix(strings.TrimPrefix(path.Clean("/"+n), "/"), "/")
}
