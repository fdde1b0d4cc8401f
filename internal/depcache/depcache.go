// Package depcache keeps the dependencies an install phase produced, so the
// next test run of the same repository, on what the install reads, skips the
// download. An entry is a tar archive of the dependency directories, written
// by a sandbox and therefore untrusted: it is only ever streamed back into a
// sandbox through the workspace filter, never unpacked on the host. Entries
// are keyed by repository, so one repository's archive is never offered to
// another, and scoped within it: an entry written for a branch or a pull
// request is offered only to that branch or pull request, one written from
// the default branch to all of the repository. The key holds everything the
// install could read (internal/testphase decides what that is). The
// directory is size-capped with least-recently-used eviction.
package depcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultScope is the scope of entries written from a repository's default
// branch: content its maintainers accepted. Only these are offered to the
// repository's other scopes.
const DefaultScope = "default"

// MaxScopeBytes bounds a scope's name.
const MaxScopeBytes = 256

// Key names one cache entry. Every field takes part in the entry's name.
type Key struct {
	// Repo is the repository's identity (the App's repository id, a
	// review's origin, an operator-enabled caller key). Empty: no caching.
	Repo string
	// Scope is where in the repository the entry comes from: DefaultScope,
	// or a branch or pull request ("pr:12", "ref:refs/heads/x"). An entry
	// is read back by its own scope, and by every scope when it is the
	// default one. Empty: no caching.
	Scope string
	// ImageDigest is the digest of the image the dependencies were built in.
	ImageDigest string
	// Install is the install command, Workdir the directory it ran in.
	Install []string
	Workdir string
	// Env holds the settings that change what is downloaded (registries).
	Env []string
	// Inputs are name → digest of everything the install may read, so that
	// two installs with the same key ran the same code on the same files
	// (the manifests alone are not that: an install runs scripts).
	Inputs map[string]string
}

// ValidScope checks a scope's shape: 1 to MaxScopeBytes bytes of printable
// text.
func ValidScope(s string) error {
	if s == "" || len(s) > MaxScopeBytes || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("depcache: a scope is 1 to %d bytes of printable text", MaxScopeBytes)
	}
	return nil
}

// ID is the entry's file name stem: a SHA-256 over every field.
func (k Key) ID() string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	// v2: scopes, and inputs beyond the manifests. Entries of v1 are never
	// looked up again (their keys could be poisoned) and age out.
	field("aster-depcache-v2")
	field(k.Repo)
	field(k.Scope)
	field(k.ImageDigest)
	field(k.Workdir)
	field(fmt.Sprint(len(k.Install)))
	for _, a := range k.Install {
		field(a)
	}
	env := slices.Sorted(slices.Values(k.Env))
	field(fmt.Sprint(len(env)))
	for _, e := range env {
		field(e)
	}
	names := make([]string, 0, len(k.Inputs))
	for n := range k.Inputs {
		names = append(names, n)
	}
	slices.Sort(names)
	field(fmt.Sprint(len(names)))
	for _, n := range names {
		field(n)
		field(k.Inputs[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Options configure a Cache.
type Options struct {
	// Dir holds the entries (created 0700).
	Dir string
	// MaxBytes caps the entries' total size; the least recently used go first.
	MaxBytes int64
	Logger   *slog.Logger
}

// Cache is a directory of entries. It is safe for concurrent use, also by
// several processes sharing the directory: every write is a temporary file
// renamed into place.
type Cache struct {
	dir      string
	maxBytes int64
	log      *slog.Logger
	mu       sync.Mutex // serialises eviction in this process
}

const (
	entrySuffix = ".entry"
	tmpPrefix   = ".tmp-"
	// maxTrailerBytes bounds the metadata read back from an entry.
	maxTrailerBytes = 4 << 10
	// staleTemp is the age past which a temporary file is a crashed write.
	staleTemp = time.Hour
)

// Open prepares the cache directory and removes stale temporary files.
func Open(opts Options) (*Cache, error) {
	if opts.Dir == "" {
		return nil, errors.New("depcache: no directory")
	}
	if opts.MaxBytes <= 0 {
		return nil, errors.New("depcache: the size cap must be positive")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("depcache: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{dir: opts.Dir, maxBytes: opts.MaxBytes, log: log}
	ents, err := os.ReadDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("depcache: %w", err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			_ = os.Remove(filepath.Join(opts.Dir, e.Name()))
		}
	}
	return c, nil
}

// MaxBytes is the cache's size cap.
func (c *Cache) MaxBytes() int64 { return c.maxBytes }

// trailer is an entry's metadata, stored after the archive followed by its
// own length (8 bytes, big-endian), so one rename publishes both.
type trailer struct {
	Repo    string    `json:"repo"`
	Scope   string    `json:"scope"`
	Bytes   int64     `json:"bytes"`
	SHA256  string    `json:"sha256"`
	Created time.Time `json:"created"`
}

// Entry is a verified archive of dependency directories.
type Entry struct {
	f    *os.File
	size int64
	// Created is when the entry was written.
	Created time.Time
	// Scope is the scope it was written for: the key's own, or DefaultScope.
	Scope string
}

// Size is the archive's size in bytes.
func (e *Entry) Size() int64 { return e.size }

// Reader reads the archive from its start; each call starts again.
func (e *Entry) Reader() io.Reader { return io.NewSectionReader(e.f, 0, e.size) }

// Close releases the entry.
func (e *Entry) Close() error { return e.f.Close() }

// Get returns the entry for key, verified against its checksum, and marks it
// used: the one of key's own scope, else the default scope's. A missing,
// unreadable or corrupt entry is a miss; a corrupt one is removed. An entry
// written for another repository, or for another scope than those two, is
// never returned.
func (c *Cache) Get(key Key) (*Entry, bool) {
	if key.Repo == "" || ValidScope(key.Scope) != nil {
		return nil, false
	}
	if e, ok := c.get(key); ok {
		return e, true
	}
	if key.Scope == DefaultScope {
		return nil, false
	}
	key.Scope = DefaultScope
	return c.get(key)
}

func (c *Cache) get(key Key) (*Entry, bool) {
	p := filepath.Join(c.dir, key.ID()+entrySuffix)
	f, err := os.Open(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn("dependency cache: open entry", "err", err)
		}
		return nil, false
	}
	t, err := verify(f)
	if err == nil && t.Repo != key.Repo {
		err = errors.New("entry belongs to another repository")
	}
	if err == nil && t.Scope != key.Scope {
		err = errors.New("entry belongs to another scope")
	}
	if err != nil {
		f.Close()
		c.log.Warn("dependency cache: dropping a bad entry", "entry", filepath.Base(p), "err", err)
		_ = os.Remove(p)
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // least recently used is by modification time
	return &Entry{f: f, size: t.Bytes, Created: t.Created, Scope: t.Scope}, true
}

// verify reads an entry's trailer and checks the archive against it.
func verify(f *os.File) (trailer, error) {
	var t trailer
	info, err := f.Stat()
	if err != nil {
		return t, err
	}
	size := info.Size()
	if size < 8 {
		return t, errors.New("entry too short")
	}
	var n [8]byte
	if _, err := f.ReadAt(n[:], size-8); err != nil {
		return t, err
	}
	tl := int64(binary.BigEndian.Uint64(n[:]))
	if tl <= 0 || tl > maxTrailerBytes || tl > size-8 {
		return t, errors.New("entry trailer has a bad length")
	}
	buf := make([]byte, tl)
	if _, err := f.ReadAt(buf, size-8-tl); err != nil {
		return t, err
	}
	dec := json.NewDecoder(bytes.NewReader(buf))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("entry trailer: %w", err)
	}
	if t.Bytes != size-8-tl {
		return t, errors.New("entry size does not match its trailer")
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, t.Bytes)); err != nil {
		return t, err
	}
	if hex.EncodeToString(h.Sum(nil)) != t.SHA256 {
		return t, errors.New("entry checksum does not match")
	}
	return t, nil
}

// ErrTooLarge says an archive is over the cache's size cap (it is not stored).
var ErrTooLarge = errors.New("dependency archive larger than the cache")

// Put stores r's archive as key's entry, in key's scope only, and evicts the
// least recently used entries past the size cap. It reads at most the cap.
func (c *Cache) Put(key Key, r io.Reader) error {
	if key.Repo == "" {
		return errors.New("depcache: no repository")
	}
	if err := ValidScope(key.Scope); err != nil {
		return err
	}
	f, err := os.CreateTemp(c.dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("depcache: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	h := sha256.New()
	room := c.maxBytes - maxTrailerBytes - 8 // the whole entry fits the cap
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, room+1))
	if err == nil && n > room {
		err = fmt.Errorf("%w (cap %d bytes)", ErrTooLarge, c.maxBytes)
	}
	if err == nil {
		err = writeTrailer(f, trailer{Repo: key.Repo, Scope: key.Scope, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)), Created: time.Now().UTC()})
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("depcache: write entry: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, key.ID()+entrySuffix)); err != nil {
		return fmt.Errorf("depcache: %w", err)
	}
	c.evict()
	return nil
}

func writeTrailer(w io.Writer, t trailer) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	_, err = w.Write(append(b, n[:]...))
	return err
}

// evict removes the least recently used entries until the rest fit the cap.
func (c *Cache) evict() {
	c.mu.Lock()
	defer c.mu.Unlock()
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		c.log.Warn("dependency cache: list", "err", err)
		return
	}
	type item struct {
		name string
		size int64
		used time.Time
	}
	var items []item
	var total int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), entrySuffix) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		items = append(items, item{e.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	slices.SortFunc(items, func(a, b item) int { return a.used.Compare(b.used) })
	for _, it := range items {
		if total <= c.maxBytes {
			break
		}
		if err := os.Remove(filepath.Join(c.dir, it.name)); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= it.size
		}
	}
}
