package depcache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func key(repo string) Key {
	return Key{Repo: repo, Scope: DefaultScope, ImageDigest: "sha256:abc", Install: []string{"npm", "ci"}, Inputs: map[string]string{"package-lock.json": "00ff"}}
}

func open(t *testing.T, max int64) *Cache {
	t.Helper()
	c, err := Open(Options{Dir: t.TempDir(), MaxBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func read(t *testing.T, e *Entry) []byte {
	t.Helper()
	b, err := io.ReadAll(e.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPutGet(t *testing.T) {
	c := open(t, 1<<20)
	if _, ok := c.Get(key("a")); ok {
		t.Fatal("hit in an empty cache")
	}
	body := bytes.Repeat([]byte("node_modules "), 1000)
	if err := c.Put(key("a"), bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	e, ok := c.Get(key("a"))
	if !ok {
		t.Fatal("miss after put")
	}
	defer e.Close()
	if got := read(t, e); !bytes.Equal(got, body) || e.Size() != int64(len(body)) {
		t.Fatalf("got %d bytes, want %d", len(got), len(body))
	}
	if got := read(t, e); !bytes.Equal(got, body) {
		t.Fatal("a second read differs")
	}
}

func TestKeyFieldsAllCount(t *testing.T) {
	base := key("a")
	variants := map[string]func(*Key){
		"repo":     func(k *Key) { k.Repo = "b" },
		"image":    func(k *Key) { k.ImageDigest = "sha256:abd" },
		"install":  func(k *Key) { k.Install = []string{"npm", "install"} },
		"workdir":  func(k *Key) { k.Workdir = "web" },
		"env":      func(k *Key) { k.Env = []string{"GOPROXY=x"} },
		"scope":    func(k *Key) { k.Scope = "pr:1" },
		"manifest": func(k *Key) { k.Inputs = map[string]string{"package-lock.json": "00fe"} },
		"renamed":  func(k *Key) { k.Inputs = map[string]string{"npm-shrinkwrap.json": "00ff"} },
		"script":   func(k *Key) { k.Inputs = map[string]string{"package-lock.json": "00ff", "scripts/install.sh": "01"} },
		// Fields are length-prefixed: moving a byte between them changes the key.
		"split": func(k *Key) { k.Install = []string{"npmc", "i"} },
	}
	seen := map[string]string{base.ID(): "base"}
	for name, change := range variants {
		k := key("a")
		k.Inputs = map[string]string{"package-lock.json": "00ff"}
		change(&k)
		id := k.ID()
		if prev, ok := seen[id]; ok {
			t.Errorf("%s gives the same id as %s", name, prev)
		}
		seen[id] = name
	}
	if key("a").ID() != base.ID() {
		t.Error("the id is not stable")
	}
}

// An entry written for repository A is never offered to B, even when B's key
// names A's entry file (a collision, or someone copying files around).
func TestOtherRepositoryNeverServed(t *testing.T) {
	c := open(t, 1<<20)
	if err := c.Put(key("org/a"), bytes.NewReader([]byte("from a"))); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(key("org/b")); ok {
		t.Fatal("repository b got repository a's entry")
	}
	// Put A's entry where B's would be.
	if err := os.Rename(filepath.Join(c.dir, key("org/a").ID()+entrySuffix), filepath.Join(c.dir, key("org/b").ID()+entrySuffix)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(key("org/b")); ok {
		t.Fatal("repository b got an entry written for a")
	}
	if _, err := os.Stat(filepath.Join(c.dir, key("org/b").ID()+entrySuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the misplaced entry was kept: %v", err)
	}
	if _, ok := c.Get(Key{}); ok {
		t.Fatal("an empty repository hit")
	}
	if err := c.Put(Key{}, bytes.NewReader(nil)); err == nil {
		t.Fatal("put without a repository")
	}
}

func TestCorruptEntryDropped(t *testing.T) {
	for name, damage := range map[string]func(p string) error{
		"flipped byte": func(p string) error {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt([]byte("X"), 3)
			return err
		},
		"truncated":   func(p string) error { return os.Truncate(p, 20) },
		"empty":       func(p string) error { return os.Truncate(p, 0) },
		"bad trailer": func(p string) error { return os.WriteFile(p, append([]byte("{}"), 0, 0, 0, 0, 0, 0, 0, 2), 0o600) },
		"huge length": func(p string) error { return os.WriteFile(p, []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			c := open(t, 1<<20)
			if err := c.Put(key("a"), bytes.NewReader(bytes.Repeat([]byte("x"), 100))); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(c.dir, key("a").ID()+entrySuffix)
			if err := damage(p); err != nil {
				t.Fatal(err)
			}
			if _, ok := c.Get(key("a")); ok {
				t.Fatal("a damaged entry was served")
			}
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the damaged entry was kept: %v", err)
			}
		})
	}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	const size = 10 << 10
	c := open(t, 3*(size+512)) // three entries and their trailers, not four
	body := bytes.Repeat([]byte("y"), size)
	old := time.Now().Add(-time.Hour)
	for i, repo := range []string{"r1", "r2", "r3"} {
		if err := c.Put(key(repo), bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		at := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(c.dir, key(repo).ID()+entrySuffix), at, at); err != nil {
			t.Fatal(err)
		}
	}
	// r1 is the oldest write, but using it makes r2 the least recently used.
	e, ok := c.Get(key("r1"))
	if !ok {
		t.Fatal("r1 missing")
	}
	e.Close()
	if err := c.Put(key("r4"), bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	for repo, want := range map[string]bool{"r1": true, "r2": false, "r3": true, "r4": true} {
		e, ok := c.Get(key(repo))
		if ok {
			e.Close()
		}
		if ok != want {
			t.Errorf("%s present = %v, want %v", repo, ok, want)
		}
	}
}

func TestTooLargeNotStored(t *testing.T) {
	c := open(t, 8<<10)
	err := c.Put(key("a"), bytes.NewReader(make([]byte, 8<<10)))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if _, ok := c.Get(key("a")); ok {
		t.Fatal("an over-cap archive was stored")
	}
	ents, _ := os.ReadDir(c.dir)
	if len(ents) != 0 {
		t.Fatalf("left files behind: %v", ents)
	}
}

func TestStaleTempRemovedOnOpen(t *testing.T) {
	dir := t.TempDir()
	stale, fresh := filepath.Join(dir, tmpPrefix+"old"), filepath.Join(dir, tmpPrefix+"new")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTemp)
	_ = os.Chtimes(stale, old, old)
	if _, err := Open(Options{Dir: dir, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("a stale temporary file was kept")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a write in progress was removed")
	}
}

// Concurrent writers and readers of the same and of other keys: every hit is
// a whole, verified archive of one writer (run with -race).
func TestConcurrent(t *testing.T) {
	c := open(t, 64<<10)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				repo := fmt.Sprintf("r%d", i%3)
				body := bytes.Repeat([]byte{byte('a' + w)}, 4<<10+w)
				if err := c.Put(key(repo), bytes.NewReader(body)); err != nil {
					errs <- err
					return
				}
				if e, ok := c.Get(key(repo)); ok {
					b, err := io.ReadAll(e.Reader())
					e.Close()
					if err != nil || len(b) < 4<<10 || !bytes.Equal(b, bytes.Repeat(b[:1], len(b))) {
						errs <- fmt.Errorf("a hit is not one writer's archive (%d bytes, %v)", len(b), err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func scoped(scope string) Key {
	k := key("org/a")
	k.Scope = scope
	return k
}

// Issue 35: an entry written for a branch or pull request is offered only
// to it; one written from the default branch to every scope; a scope's own
// entry comes before the default one.
func TestScopes(t *testing.T) {
	c := open(t, 1<<20)
	if err := c.Put(scoped("pr:1"), bytes.NewReader([]byte("from pr 1"))); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{DefaultScope, "pr:2", "ref:refs/heads/main", "pr:10"} {
		if e, ok := c.Get(scoped(other)); ok {
			t.Errorf("scope %s got pr:1's entry %q", other, read(t, e))
			e.Close()
		}
	}
	hit := func(scope, want, wantScope string) {
		t.Helper()
		e, ok := c.Get(scoped(scope))
		if !ok {
			t.Fatalf("scope %s: miss, want %q", scope, want)
		}
		defer e.Close()
		if got := read(t, e); string(got) != want || e.Scope != wantScope {
			t.Fatalf("scope %s: got %q from %s, want %q from %s", scope, got, e.Scope, want, wantScope)
		}
	}
	hit("pr:1", "from pr 1", "pr:1")
	if err := c.Put(scoped(DefaultScope), bytes.NewReader([]byte("from the default branch"))); err != nil {
		t.Fatal(err)
	}
	hit("pr:2", "from the default branch", DefaultScope)
	hit(DefaultScope, "from the default branch", DefaultScope)
	hit("pr:1", "from pr 1", "pr:1")

	// A pull request's entry placed where the default one lives is dropped:
	// the trailer names the scope it was written for.
	if err := os.Rename(filepath.Join(c.dir, scoped("pr:1").ID()+entrySuffix), filepath.Join(c.dir, scoped(DefaultScope).ID()+entrySuffix)); err != nil {
		t.Fatal(err)
	}
	if e, ok := c.Get(scoped("pr:3")); ok {
		t.Fatalf("pr:3 got a misplaced entry %q (scope %s)", read(t, e), e.Scope)
	}
	for _, bad := range []string{"", "pr\n1", string(make([]byte, MaxScopeBytes+1))} {
		if _, ok := c.Get(scoped(bad)); ok {
			t.Errorf("scope %q hit", bad)
		}
		if err := c.Put(scoped(bad), bytes.NewReader(nil)); err == nil {
			t.Errorf("put with scope %q", bad)
		}
	}
}
