package bench

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// AppSourceExts are the files a pull request of the App benchmark changes:
// Python, JavaScript, TypeScript and Go.
var AppSourceExts = []string{".py", ".js", ".ts", ".go"}

// appMaxFileBytes skips files larger than this in the bundles: generated or
// vendored data, not the code a pull request touches.
const appMaxFileBytes = 512 << 10

// changePool is what the App benchmark's pull requests are made of: the
// first commit's tree of every bundle (the repository's base, each bundle
// under its NAME/), and the source files that differ between that commit and
// the bundle's tip, with both contents. Pull request i changes FilesPerPR of
// them to their tip content.
type changePool struct {
	base    map[string]string
	changed []changedFile
	sources []AppSource
}

type changedFile struct{ path, head string }

// AppSource says where a pull request's code comes from.
type AppSource struct {
	Bundle string `json:"bundle"`
	Base   string `json:"base"`
	Tip    string `json:"tip"`
	// BaseFiles is the size of the bundle's base tree; Changed the source
	// files (AppSourceExts) modified between base and tip, the pool the
	// pull requests draw from.
	BaseFiles int `json:"base_files"`
	Changed   int `json:"changed"`
}

// loadChangePool reads each bundle into a scratch repository under tmp.
func loadChangePool(ctx context.Context, bundles []string, tmp string) (*changePool, error) {
	p := &changePool{base: map[string]string{}}
	for _, b := range bundles {
		name := strings.TrimSuffix(filepath.Base(b), BundleSuffix)
		src, err := loadBundleChange(ctx, b, filepath.Join(tmp, "src-"+name))
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", b, err)
		}
		for f, content := range src.base {
			p.base[name+"/"+f] = content
		}
		for _, c := range src.changed {
			p.changed = append(p.changed, changedFile{path: name + "/" + c.path, head: c.head})
		}
		p.sources = append(p.sources, src.sources[0])
	}
	if len(p.changed) == 0 {
		return nil, fmt.Errorf("no %s file changes between the first commit and the tip of %s", strings.Join(AppSourceExts, "/"), strings.Join(bundles, ", "))
	}
	return p, nil
}

func loadBundleChange(ctx context.Context, bundle, dir string) (*changePool, error) {
	abs, err := filepath.Abs(bundle)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	if _, err := git("init", "-q"); err != nil {
		return nil, err
	}
	heads, err := git("bundle", "list-heads", abs)
	if err != nil {
		return nil, err
	}
	tip := ""
	for line := range strings.Lines(string(heads)) {
		if sha, ref, ok := strings.Cut(strings.TrimSpace(line), " "); ok && strings.HasPrefix(ref, "refs/heads/") {
			tip = sha
			break
		}
	}
	if tip == "" {
		return nil, errors.New("no branch in the bundle")
	}
	if _, err := git("fetch", "-q", abs, "refs/heads/*:refs/heads/*"); err != nil {
		return nil, err
	}
	roots, err := git("rev-list", "--max-parents=0", tip)
	if err != nil {
		return nil, err
	}
	root := strings.TrimSpace(string(roots))
	if i := strings.LastIndexByte(root, '\n'); i >= 0 {
		root = root[i+1:]
	}
	if root == tip {
		return nil, errors.New("one commit only: no change to draw pull requests from")
	}
	names, err := git("diff", "--name-only", "-z", "--no-renames", "--diff-filter=M", root, tip)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range strings.Split(string(names), "\x00") {
		if slices.Contains(AppSourceExts, path.Ext(n)) {
			want[n] = true
		}
	}
	baseTar, err := git("archive", "--format=tar", root)
	if err != nil {
		return nil, err
	}
	base, err := tarFiles(baseTar, nil)
	if err != nil {
		return nil, err
	}
	tipTar, err := git("archive", "--format=tar", tip)
	if err != nil {
		return nil, err
	}
	head, err := tarFiles(tipTar, want)
	if err != nil {
		return nil, err
	}
	p := &changePool{base: base}
	for n := range want {
		if _, ok := base[n]; ok && head[n] != "" && head[n] != base[n] {
			p.changed = append(p.changed, changedFile{path: n, head: head[n]})
		}
	}
	slices.SortFunc(p.changed, func(a, b changedFile) int { return strings.Compare(a.path, b.path) })
	p.sources = []AppSource{{Bundle: filepath.Base(bundle), Base: root, Tip: tip, BaseFiles: len(base), Changed: len(p.changed)}}
	return p, nil
}

// tarFiles returns the regular files of a tar archive up to appMaxFileBytes
// each, only those in want when want is not nil.
func tarFiles(archive []byte, want map[string]bool) (map[string]string, error) {
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg || h.Size > appMaxFileBytes || (want != nil && !want[h.Name]) {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read archive: %w", err)
		}
		out[h.Name] = string(b)
	}
}

// change is pull request i's files (0-based): files consecutive changed
// files of the pool, wrapping around, at their tip content.
func (p *changePool) change(i, files int) map[string]string {
	files = min(files, len(p.changed))
	out := make(map[string]string, files)
	for k := range files {
		c := p.changed[(i*files+k)%len(p.changed)]
		out[c.path] = c.head
	}
	return out
}
