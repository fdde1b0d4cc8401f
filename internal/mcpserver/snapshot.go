package mcpserver

import (
	"encoding/base64"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

// SnapshotInput is a repository snapshot given to run_tests or validate: a
// directory on the server, files inline, or a tar archive. Exactly one.
type SnapshotInput struct {
	Path        string            `json:"path,omitempty" jsonschema:"a directory on the MCP server's machine to copy into /work (only under the server's allowed directories; symlinks are copied as links, never followed)."`
	Files       map[string]string `json:"files,omitempty" jsonschema:"the snapshot as files: relative path to UTF-8 content."`
	BinaryFiles map[string]string `json:"binary_files,omitempty" jsonschema:"more files, with base64-encoded content."`
	TarBase64   string            `json:"tar_base64,omitempty" jsonschema:"the snapshot as an uncompressed tar archive, base64-encoded. Absolute or ../ paths, links leaving the tree and device nodes are refused."`
}

// spoolSnapshot writes the snapshot to a validated temporary tar (capped at
// maxBytes of file content) and lists its files. The caller removes it.
func (s *Server) spoolSnapshot(in SnapshotInput, maxBytes int64) (*gate.Snapshot, error) {
	given := 0
	for _, b := range []bool{in.Path != "", len(in.Files)+len(in.BinaryFiles) > 0, in.TarBase64 != ""} {
		if b {
			given++
		}
	}
	switch {
	case given == 0:
		return nil, sandbox.Invalidf("no snapshot: give path (a directory on the server), files, or tar_base64")
	case given > 1:
		return nil, sandbox.Invalidf("give one of path, files or tar_base64")
	}
	caps := workspace.Caps{MaxBytes: maxBytes}
	var src io.Reader
	switch {
	case in.Path != "":
		dir, err := s.allowedDir(in.Path)
		if err != nil {
			return nil, err
		}
		pr, pw := io.Pipe()
		go func() {
			_, _, err := workspace.PackDir(dir, pw, caps)
			pw.CloseWithError(err)
		}()
		defer pr.Close()
		src = pr
	case in.TarBase64 != "":
		src = base64.NewDecoder(base64.StdEncoding, strings.NewReader(in.TarBase64))
	default:
		files := make(map[string][]byte, len(in.Files)+len(in.BinaryFiles))
		for name, content := range in.Files {
			files[name] = []byte(content)
		}
		for _, name := range slices.Sorted(maps.Keys(in.BinaryFiles)) {
			data, err := base64.StdEncoding.DecodeString(in.BinaryFiles[name])
			if err != nil {
				return nil, sandbox.Invalidf("binary_files[%q] is not valid base64: %v", name, err)
			}
			if _, dup := files[name]; dup {
				return nil, sandbox.Invalidf("file %q is given twice", name)
			}
			files[name] = data
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := workspace.PackFiles(files, pw, caps)
			pw.CloseWithError(err)
		}()
		defer pr.Close()
		src = pr
	}
	snap, err := gate.SpoolSnapshot(src, "", caps)
	if err != nil {
		// A tar_base64 that is not base64 is as invalid as an unsafe entry.
		return nil, sandbox.WorkspaceError("snapshot", err, sandbox.ErrInvalidSpec)
	}
	return snap, nil
}

// allowedDir resolves a server-side path (relative paths against the first
// allowed directory) and refuses anything outside the allowed directories,
// symlinks resolved, so a caller cannot read the server's files at large.
func (s *Server) allowedDir(p string) (string, error) {
	if len(s.opts.AllowedDirs) == 0 {
		return "", sandbox.Invalidf("this server reads no directories of its own (start it with --allow-dir); send the files instead")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.opts.AllowedDirs[0], p)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", sandbox.Invalidf("path %q: %v", p, err)
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.IsDir() {
		return "", sandbox.Invalidf("path %q is not a directory", p)
	}
	for _, root := range s.opts.AllowedDirs {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(r, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return real, nil
		}
	}
	return "", sandbox.Invalidf("path %q is outside the directories this server may read (%s)", p, strings.Join(s.opts.AllowedDirs, ", "))
}
