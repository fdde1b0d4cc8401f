package testphase

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/workspace"
)

// What keys the dependency cache (issue 35).
//
// An entry is what an install produced, and an install is a program run on
// the repository: two installs give the same dependencies only when they ran
// the same program on the same files. The manifests alone are not that. npm
// runs lifecycle scripts (the project's preinstall, install, postinstall,
// prepare, and those of any dependency, which get the project's directory);
// pip builds a local project with its own setup.py or build backend, which
// may import any file; a setup command from .aster.yml runs what it names,
// which may read anything. What a script reads cannot be followed, so a key
// holds one of two things:
//
//   - the files, when the install runs no code of the tree and reads a set of
//     files known in advance: `go mod download` (every go.mod, go.sum, go.work,
//     go.work.sum and vendor/modules.txt of the tree: a local replacement's
//     go.mod is read too); `pip install -r requirements.txt` whose every line
//     is a requirement from an index (no path, URL, -r, -c, -e, --find-links,
//     build option; index options only with http(s) URLs); `npm ci` with a
//     lockfile of version 2 or later in which no package has an install
//     script, is a link, or comes from anything but an http(s) URL, and a
//     package.json with no lifecycle script, no workspaces and no gypfile,
//     with no binding.gyp beside it and no .npmrc anywhere in the tree;
//   - otherwise the whole tree: every entry's name, type, mode, link target
//     and content. A setup command, `pip install .`, `npm install` without a
//     lockfile, npm with any install script: a hit needs the same tree.
//
// Both also hold the dependency directories as the tree has them (a
// committed node_modules, .venv or .aster is where the install writes, and
// tools trust what they find there: pip reads .venv/pip.conf, Go the module
// cache). The caller's environment is in the key as well; a variable outside
// a short list of ones that name no file sends the key to the whole tree
// (GOFLAGS=-modfile=x, NODE_OPTIONS=--require ./y and the like read files).
//
// Scopes (depcache.Key.Scope) are the second wall: even a key that missed a
// file only ever serves the branch or pull request that wrote it, or every
// one when the default branch wrote it.

// Names of Inputs that are not files: archive names never start with "/".
const (
	inputTree = "/tree" // the whole tree
	inputDeps = "/deps" // the dependency directories as the tree has them
)

// Bounds of what the key's scan keeps in memory; past them, the whole tree.
const (
	maxLockBytes     = 32 << 20 // package-lock.json, npm-shrinkwrap.json
	maxManifestBytes = 1 << 20  // package.json, requirements.txt
	maxKeyFiles      = 1000     // Go's files named in a key
)

// Key bases, for the log.
const (
	basisFiles = "files"
	basisTree  = "tree"
)

// treeScan is what one pass over the repository's archive learns for a key.
type treeScan struct {
	tree, deps hash.Hash
	// files are name → digest of the files a key by files may hold.
	files map[string]string
	// goFiles are the names of Go's module files seen (up to maxKeyFiles+1).
	goFiles []string
	// kept are the contents of the manifests a key by files must parse.
	kept        map[string][]byte
	npmrc, gyp  bool
	workdir     string
	manifestsAt map[string]int64 // name → bound of the manifests to keep
}

// scanTree reads the repository's archive (already through the workspace
// filter) once.
func scanTree(r io.Reader, workdir string) (*treeScan, error) {
	s := &treeScan{tree: sha256.New(), deps: sha256.New(), files: map[string]string{}, kept: map[string][]byte{},
		workdir: workdir, manifestsAt: map[string]int64{}}
	for _, m := range []string{"package.json", "requirements.txt"} {
		s.manifestsAt[path.Join(workdir, m)] = maxManifestBytes
	}
	for _, m := range []string{"package-lock.json", "npm-shrinkwrap.json"} {
		s.manifestsAt[path.Join(workdir, m)] = maxLockBytes
	}
	prefixes := depPrefixes(workdir)
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read repository archive: %w", err)
		}
		name := strings.TrimSuffix(path.Clean(hdr.Name), "/")
		content := sha256.New()
		var keep *bytes.Buffer
		bound, manifest := s.manifestsAt[name]
		if manifest && hdr.Typeflag == tar.TypeReg {
			keep = &bytes.Buffer{}
		}
		if hdr.Typeflag == tar.TypeReg {
			var w io.Writer = content
			if keep != nil {
				w = io.MultiWriter(content, &limitedBuffer{b: keep, max: bound})
			}
			if _, err := io.Copy(w, tr); err != nil {
				return nil, fmt.Errorf("read %s: %w", workspace.Quote(hdr.Name), err)
			}
		}
		d := entryDigest(name, hdr, content.Sum(nil))
		writeField(s.tree, name)
		writeField(s.tree, d)
		if underAny(name, prefixes) {
			writeField(s.deps, name)
			writeField(s.deps, d)
		}
		switch base := path.Base(name); {
		case base == ".npmrc":
			s.npmrc = true
		case name == path.Join(workdir, "binding.gyp"):
			s.gyp = true
		case goModuleFile(name):
			if len(s.goFiles) <= maxKeyFiles {
				s.goFiles = append(s.goFiles, name)
				s.files[name] = d
			}
		case manifest:
			s.files[name] = d
			// A later entry of the same name is the one unpacked; one past
			// its bound is not kept (the key then holds the whole tree).
			delete(s.kept, name)
			if keep != nil && int64(keep.Len()) <= bound {
				s.kept[name] = keep.Bytes()
			}
		}
	}
}

// goModuleFile says whether name is a file `go mod download` may read.
func goModuleFile(name string) bool {
	switch path.Base(name) {
	case "go.mod", "go.sum", "go.work", "go.work.sum":
		return true
	case "modules.txt":
		return path.Base(path.Dir(name)) == "vendor"
	}
	return false
}

// entryDigest is one archive entry as the key sees it: what unpacking it
// gives (type, mode, size, link target, content).
func entryDigest(name string, hdr *tar.Header, content []byte) string {
	h := sha256.New()
	writeField(h, name)
	writeField(h, string(rune(hdr.Typeflag)))
	writeField(h, fmt.Sprintf("%o %d", hdr.Mode&0o7777, hdr.Size))
	writeField(h, hdr.Linkname)
	if hdr.Typeflag == tar.TypeReg {
		writeField(h, string(content))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeField writes s length-prefixed, so fields cannot run into each other.
func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// limitedBuffer keeps up to max+1 bytes (one past tells the bound was
// passed) and takes every write whole.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int64
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max + 1 - int64(l.b.Len()); room > 0 {
		l.b.Write(p[:min(int64(len(p)), room)])
	}
	return len(p), nil
}

// inputs are the key's Inputs for install step in and the caller's
// environment, and the basis they rest on (basisFiles or basisTree).
func (s *treeScan) inputs(in *testrun.Install, env map[string]string) (map[string]string, string) {
	out := map[string]string{inputDeps: hex.EncodeToString(s.deps.Sum(nil))}
	names, ok := s.filesRead(in)
	if ok && !envMayNameFiles(env) {
		for _, n := range names {
			out[n] = s.files[n]
		}
		return out, basisFiles
	}
	out[inputTree] = hex.EncodeToString(s.tree.Sum(nil))
	return out, basisTree
}

// filesRead are the files the install reads, when they are known: it runs
// no code of the tree. ok is false otherwise.
func (s *treeScan) filesRead(in *testrun.Install) ([]string, bool) {
	at := func(m string) string { return path.Join(s.workdir, m) }
	present := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if _, ok := s.files[at(n)]; ok {
				out = append(out, at(n))
			}
		}
		return out
	}
	switch {
	case in.Kind == "go" && slices.Equal(in.Argv, []string{"go", "mod", "download", "-x"}):
		if len(s.goFiles) > maxKeyFiles {
			return nil, false
		}
		return s.goFiles, true
	case in.Kind == "pip" && len(in.Argv) >= 2 && in.Argv[len(in.Argv)-2] == "-r" && in.Argv[len(in.Argv)-1] == "requirements.txt":
		req, ok := s.kept[at("requirements.txt")]
		if !ok || !indexOnlyRequirements(req) {
			return nil, false
		}
		return present("requirements.txt"), true
	case in.Kind == "npm" && len(in.Argv) >= 2 && in.Argv[0] == "npm" && in.Argv[1] == "ci":
		if s.npmrc || s.gyp {
			return nil, false
		}
		// npm ci reads npm-shrinkwrap.json when there is one.
		lockName := at("npm-shrinkwrap.json")
		if _, ok := s.files[lockName]; !ok {
			lockName = at("package-lock.json")
		}
		pkg, okPkg := s.kept[at("package.json")]
		lock, okLock := s.kept[lockName]
		if !okPkg || !okLock || !npmRunsNoTreeCode(pkg, lock) {
			return nil, false
		}
		return present("package.json", "package-lock.json", "npm-shrinkwrap.json"), true
	}
	return nil, false
}

// npmLifecycle are the scripts of the project's package.json that npm ci
// runs (binding.gyp adds an implicit install).
var npmLifecycle = []string{"preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare", "dependencies"}

// npmRunsNoTreeCode says whether npm ci on this package.json and lockfile
// runs no code that could read the tree: no lifecycle script of the project
// or of any package, no workspace or link, every package from an http(s)
// URL. Anything it cannot read is a no.
func npmRunsNoTreeCode(pkgJSON, lockJSON []byte) bool {
	var pkg struct {
		Scripts    map[string]json.RawMessage `json:"scripts"`
		Workspaces json.RawMessage            `json:"workspaces"`
		Gypfile    json.RawMessage            `json:"gypfile"`
	}
	if err := json.Unmarshal(pkgJSON, &pkg); err != nil {
		return false
	}
	for _, s := range npmLifecycle {
		if _, ok := pkg.Scripts[s]; ok {
			return false
		}
	}
	if !nullish(pkg.Workspaces) || !(nullish(pkg.Gypfile) || string(pkg.Gypfile) == "false") {
		return false
	}
	var lock struct {
		LockfileVersion int `json:"lockfileVersion"`
		Packages        map[string]struct {
			Resolved         string `json:"resolved"`
			Link             bool   `json:"link"`
			HasInstallScript bool   `json:"hasInstallScript"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lockJSON, &lock); err != nil || lock.LockfileVersion < 2 || lock.Packages == nil {
		return false
	}
	for name, p := range lock.Packages {
		if p.HasInstallScript || p.Link {
			return false
		}
		if name != "" && !strings.HasPrefix(p.Resolved, "https://") && !strings.HasPrefix(p.Resolved, "http://") {
			return false
		}
	}
	return true
}

func nullish(m json.RawMessage) bool {
	s := strings.TrimSpace(string(m))
	return s == "" || s == "null" || s == "[]" || s == "{}"
}

// indexOnlyRequirements says whether every line of a requirements file
// names a requirement pip takes from an index: no local path, archive, URL,
// included file, editable install or build option; index options only with
// an http(s) URL. Anything it does not recognise is a no.
func indexOnlyRequirements(b []byte) bool {
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	text = strings.ReplaceAll(text, "\\\n", " ") // pip joins continued lines first
	for line := range strings.SplitSeq(text, "\n") {
		if i := commentStart(line); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "-"):
			if !indexOption(line) {
				return false
			}
		default:
			if !indexRequirement(line) {
				return false
			}
		}
	}
	return true
}

// commentStart is where pip's comment starts: a # at the start of the line
// or after whitespace; -1 for none.
func commentStart(line string) int {
	for i := range len(line) {
		if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return i
		}
	}
	return -1
}

// indexOption accepts the options of a requirements file that only choose
// among index releases.
func indexOption(line string) bool {
	name, value, _ := strings.Cut(line, "=")
	if f := strings.Fields(name); len(f) > 1 {
		name, value = f[0], strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), f[0]))
	}
	value = strings.TrimSpace(value)
	switch name {
	case "-i", "--index-url", "--extra-index-url":
		return (strings.HasPrefix(value, "https://") || strings.HasPrefix(value, "http://")) && !strings.ContainsAny(value, " \t$")
	case "--trusted-host", "--only-binary", "--no-binary":
		return value != "" && !strings.ContainsAny(value, "/\\$ \t")
	case "--pre", "--prefer-binary", "--require-hashes":
		return value == ""
	}
	return false
}

// archiveSuffixes make pip read a requirement's name as a file.
var archiveSuffixes = []string{".zip", ".whl", ".tar", ".tgz", ".gz", ".bz2", ".tbz", ".xz", ".txz", ".tlz", ".lz", ".lzma"}

// indexRequirement accepts "name[extras] specifiers ; marker --hash=...".
func indexRequirement(line string) bool {
	req := line
	if i := strings.Index(line, " --"); i >= 0 {
		req = line[:i]
		for _, opt := range strings.Fields(line[i:]) {
			if !hashOption(opt) {
				return false
			}
		}
	}
	if req == "" || strings.ContainsFunc(req, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" \t._-[],<>=!~*+;'\"()", r))
	}) {
		return false
	}
	end := strings.IndexFunc(req, func(r rune) bool { return strings.ContainsRune(" \t[]<>=!~;,()'\"", r) })
	name := req
	if end >= 0 {
		name = req[:end]
	}
	if name == "" || !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return false
	}
	lower := strings.ToLower(name)
	return !slices.ContainsFunc(archiveSuffixes, func(s string) bool { return strings.HasSuffix(lower, s) })
}

func hashOption(opt string) bool {
	v, ok := strings.CutPrefix(opt, "--hash=")
	if !ok {
		return false
	}
	algo, digest, ok := strings.Cut(v, ":")
	return ok && algo != "" && digest != "" && !strings.ContainsFunc(algo+digest, func(r rune) bool { return !isAlnum(byte(r)) || r > 0x7f })
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// quietEnv are caller variables that name no file: with any other, a key
// holds the whole tree.
var quietEnv = map[string]bool{"CI": true, "NODE_ENV": true, "LANG": true, "LC_ALL": true, "TZ": true, "CGO_ENABLED": true,
	"GOOS": true, "GOARCH": true, "PYTHONDONTWRITEBYTECODE": true, "PYTHONUNBUFFERED": true, "TERM": true, "NO_COLOR": true}

// envMayNameFiles says whether the caller's environment may make the
// install read files of the tree.
func envMayNameFiles(env map[string]string) bool {
	for k, v := range env {
		switch {
		case quietEnv[k]:
		case k == "HOME" && (v == "/tmp" || strings.HasPrefix(path.Clean(v), "/tmp/")):
		default:
			return true
		}
	}
	return false
}
