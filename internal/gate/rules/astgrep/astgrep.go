// Package astgrep is Aster's own ast-grep rule pack: security rules for
// Python, JavaScript/TypeScript, Go, shell, Java, Kotlin, PHP, Ruby and C#, each with a CWE, embedded in
// the binary so that a review uses the pack of its Aster version. The gate
// hands the pack to ast-grep on the analyzer's stdin as a tar (Tar) that the
// sandbox unpacks outside the repository tree; the repository's own files,
// including any sgconfig.yml of its own, are never read as configuration.
package astgrep

import (
	"archive/tar"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed sgconfig.yml rules/*.yml utils/*.yml
var pack embed.FS

// ConfigFile is the pack's ast-grep project file, relative to the pack root.
const ConfigFile = "sgconfig.yml"

// FS returns the pack: ConfigFile and rules/*.yml.
func FS() fs.FS { return pack }

// Rule is what the pack says about one rule.
type Rule struct {
	ID       string `yaml:"id"`
	Language string `yaml:"language"`
	Severity string `yaml:"severity"`
	Message  string `yaml:"message"`
	URL      string `yaml:"url"`
	Metadata struct {
		CWE      string `yaml:"cwe"`
		Category string `yaml:"category"`
	} `yaml:"metadata"`
	// File is the rule's file in the pack.
	File string `yaml:"-"`
}

// Rules returns every rule of the pack, sorted by id.
func Rules() ([]Rule, error) {
	names, err := fs.Glob(pack, "rules/*.yml")
	if err != nil {
		return nil, err
	}
	var out []Rule
	for _, name := range names {
		b, err := pack.ReadFile(name)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var r Rule
			if err := dec.Decode(&r); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("rule pack %s: %w", name, err)
			}
			r.File = name
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Rule) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Tar returns the pack as an uncompressed tar: ConfigFile at its root, the
// rule files under rules/ and FilesList naming files, all regular files of
// mode 0644.
func Tar(files []string) ([]byte, error) {
	var list bytes.Buffer
	for _, f := range files {
		if strings.ContainsRune(f, 0) {
			return nil, fmt.Errorf("rule pack tar: file name %q contains NUL", f)
		}
		list.WriteString(f)
		list.WriteByte(0)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := fs.WalkDir(pack, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := pack.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: path.Clean(p), Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.WriteHeader(&tar.Header{Name: FilesList, Mode: 0o644, Size: int64(list.Len()), Typeflag: tar.TypeReg, Format: tar.FormatPAX})
	}
	if err == nil {
		_, err = tw.Write(list.Bytes())
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("rule pack tar: %w", err)
	}
	return buf.Bytes(), nil
}

// ScanArgs is the ast-grep argv (after the program name) that scans, with
// the pack whose ConfigFile is at config, the paths the caller appends: one
// JSON object per match with the rule's metadata, and no ignore file of the
// repository honoured, so that a repository cannot hide its own files.
// Minified bundles (*.min.js) are not source anyone reviews: a directory's
// walk skips them, but a file named on the command line is always read, so a
// caller naming files leaves them out itself.
func ScanArgs(config string) []string {
	return []string{"scan", "--config", config, "--json=stream", "--include-metadata", "--color=never",
		"--no-ignore=hidden", "--no-ignore=dot", "--no-ignore=vcs", "--no-ignore=exclude",
		"--no-ignore=global", "--no-ignore=parent", "--globs=!*.min.js"}
}

// FilesList is the pack's entry listing the files to scan, NUL-terminated.
const FilesList = "files0"
