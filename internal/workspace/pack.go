package workspace

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"time"
)

// PackDir writes the tree under dir as a tar stream to w. It opens everything
// through os.Root and never follows a symlink: a link is stored as a link, so a
// link to a host file puts nothing of that file in the archive. Sockets, devices
// and FIFOs are skipped and reported in the returned list.
func PackDir(dir string, w io.Writer, caps Caps) (Stats, []string, error) {
	return PackDirWithFiles(dir, nil, w, caps)
}

// PackDirWithFiles is PackDir followed by extra files (relative path →
// content), which replace same-named files of the directory when unpacked.
func PackDirWithFiles(dir string, extra map[string][]byte, w io.Writer, caps Caps) (Stats, []string, error) {
	caps = caps.withDefaults()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Stats{}, nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	var st Stats
	var skipped []string
	walkErr := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		info, err := root.Lstat(name)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: name, ModTime: info.ModTime().Truncate(time.Second), Mode: int64(info.Mode().Perm()), Format: tar.FormatPAX}
		switch {
		case info.Mode().IsRegular():
			hdr.Typeflag = tar.TypeReg
			hdr.Size = info.Size()
		case info.IsDir():
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(name)
			if err != nil {
				return err
			}
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = target
		default:
			skipped = append(skipped, name)
			return nil
		}
		st.Files++
		if st.Files > caps.MaxFiles {
			return fmt.Errorf("%w: more than %d entries in %s", ErrTooLarge, caps.MaxFiles, dir)
		}
		if hdr.Typeflag == tar.TypeReg {
			if hdr.Size > caps.MaxBytes-st.Bytes {
				return fmt.Errorf("%w: more than %d bytes of files in %s", ErrTooLarge, caps.MaxBytes, dir)
			}
			st.Bytes += hdr.Size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := root.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		// Copy exactly the size announced; a file that grew or shrank meanwhile
		// is an error rather than a corrupt archive.
		if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
			return fmt.Errorf("read %s: %w", Quote(name), err)
		}
		return nil
	})
	if walkErr != nil {
		return st, skipped, fmt.Errorf("pack %s: %w", dir, walkErr)
	}
	if len(extra) > 0 {
		more, err := writeFiles(tw, extra, Caps{MaxBytes: caps.MaxBytes - st.Bytes, MaxFiles: caps.MaxFiles - st.Files})
		st.Files += more.Files
		st.Bytes += more.Bytes
		if err != nil {
			return st, skipped, err
		}
	}
	if err := tw.Close(); err != nil {
		return st, skipped, err
	}
	return st, skipped, nil
}

// PackFiles writes files (relative path → content) as a tar stream to w, with
// their parent directories. Names are validated like archive members. Files whose
// content starts with "#!" are made executable.
func PackFiles(files map[string][]byte, w io.Writer, caps Caps) (Stats, error) {
	tw := tar.NewWriter(w)
	st, err := writeFiles(tw, files, caps.withDefaults())
	if err != nil {
		return st, err
	}
	return st, tw.Close()
}

func writeFiles(tw *tar.Writer, files map[string][]byte, caps Caps) (Stats, error) {
	sources := make(map[string]FileSource, len(files))
	for name, data := range files {
		sources[name] = BytesSource(data)
	}
	return writeSources(tw, sources, caps)
}

// writeSources is writeFiles for contents read from their sources: the one
// set of checks, errors and entries of PackFiles and PackSources.
func writeSources(tw *tar.Writer, files map[string]FileSource, caps Caps) (Stats, error) {
	if caps.MaxFiles <= 0 || caps.MaxBytes < 0 {
		return Stats{}, fmt.Errorf("%w: no room left for files", ErrTooLarge)
	}
	// The given names in sorted order, so a bad or doubled name is reported
	// the same way on every call with the same files.
	names := make([]string, 0, len(files))
	clean := make(map[string]string, len(files))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		c, err := CleanName(name)
		if err != nil {
			return Stats{}, err
		}
		if c == "." {
			return Stats{}, fmt.Errorf("%w: file name %s names the workspace itself", ErrUnsafe, Quote(name))
		}
		if prev, dup := clean[c]; dup {
			return Stats{}, fmt.Errorf("%w: %s and %s name the same file", ErrUnsafe, Quote(prev), Quote(name))
		}
		clean[c] = name
		names = append(names, c)
	}
	slices.Sort(names)
	var st Stats
	dirs := map[string]bool{}
	now := time.Now().Truncate(time.Second)
	var mkdirs func(string) error
	mkdirs = func(d string) error {
		if d == "." || d == "/" || dirs[d] {
			return nil
		}
		if err := mkdirs(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		st.Files++
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: now, Format: tar.FormatPAX})
	}
	for _, c := range names {
		src := files[clean[c]]
		if err := mkdirs(path.Dir(c)); err != nil {
			return st, err
		}
		st.Files++
		if st.Files > caps.MaxFiles {
			return st, fmt.Errorf("%w: more than %d files", ErrTooLarge, caps.MaxFiles)
		}
		if src.Size > caps.MaxBytes-st.Bytes {
			return st, fmt.Errorf("%w: more than %d bytes of files", ErrTooLarge, caps.MaxBytes)
		}
		st.Bytes += src.Size
		mode := int64(0o644)
		if src.Script {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: c, Size: src.Size, Mode: mode, ModTime: now, Format: tar.FormatPAX}); err != nil {
			return st, err
		}
		if err := src.copyTo(tw, c); err != nil {
			return st, err
		}
	}
	return st, nil
}
