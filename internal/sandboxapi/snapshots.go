package sandboxapi

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// DefaultMaxSnapshotBytes bounds the snapshots the server keeps, all tokens
// together; the least recently used are dropped first past it.
const DefaultMaxSnapshotBytes = 2 << 30

// snapshotStore keeps session snapshots (tar archives of a session's /work,
// or gVisor checkpoints of a whole session: memory snapshots) as files in a
// directory of the server's own, each readable only by the
// token that made it. The index lives in memory: snapshots last as long as
// the server process, like the sessions they come from, and the directory
// is emptied at start.
type snapshotStore struct {
	dir string
	max int64

	mu    sync.Mutex
	items map[string]*snapshot
	total int64
}

type snapshot struct {
	id, owner, session string
	size               int64
	created, used      time.Time

	// mem is a memory snapshot's checkpoint (a directory), nil for an
	// archive. refs counts the forks restoring from it now: a dropped one
	// is removed when the last has read it.
	mem     *sandbox.MemorySnapshot
	refs    int
	dropped bool
}

func newSnapshotStore(dir string, max int64) (*snapshotStore, error) {
	if max <= 0 {
		max = DefaultMaxSnapshotBytes
	}
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("empty the snapshot directory: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("snapshot directory: %w", err)
		}
	}
	return &snapshotStore{dir: dir, max: max, items: map[string]*snapshot{}}, nil
}

func (st *snapshotStore) path(id string) string { return filepath.Join(st.dir, id+".tar") }

func newSnapshotID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "snap-" + hex.EncodeToString(b[:])
}

// ensureDirLocked makes the store's directory when the first snapshot is
// taken, if the operator named none.
func (st *snapshotStore) ensureDirLocked() error {
	if st.dir != "" {
		return nil
	}
	d, err := os.MkdirTemp("", "aster-snapshots-")
	if err != nil {
		return fmt.Errorf("snapshot directory: %w", err)
	}
	st.dir = d
	return nil
}

// putMemory stores a memory snapshot for owner: take checkpoints the
// session into an empty directory of the store's. It counts toward the
// store's cap like an archive; the least recently used snapshots (of any
// token) are dropped to make room.
func (st *snapshotStore) putMemory(owner, session string, take func(dir string) (sandbox.MemorySnapshot, error), now time.Time) (*snapshot, error) {
	st.mu.Lock()
	if err := st.ensureDirLocked(); err != nil {
		st.mu.Unlock()
		return nil, err
	}
	id := newSnapshotID()
	dir := filepath.Join(st.dir, id+".mem")
	st.mu.Unlock()
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store snapshot: %w", err)
	}
	mem, err := take(dir)
	if err == nil && mem.SizeBytes > st.max {
		err = fmt.Errorf("%w: the memory snapshot is %s, more than the server keeps for all snapshots (%s)", sandbox.ErrTooLarge, units.FormatBytes(mem.SizeBytes), units.FormatBytes(st.max))
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	sn := &snapshot{id: id, owner: owner, session: session, size: mem.SizeBytes, created: now, used: now, mem: &mem}
	st.mu.Lock()
	defer st.mu.Unlock()
	for st.total+sn.size > st.max {
		st.evictLocked()
	}
	st.items[sn.id] = sn
	st.total += sn.size
	return sn, nil
}

// getMemory returns owner's memory snapshot id (nil for an archive one)
// and marks it used; release, once the fork has been restored, lets a drop
// meanwhile remove it.
func (st *snapshotStore) getMemory(owner, id string, now time.Time) (*sandbox.MemorySnapshot, func(), error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	sn, ok := st.items[id]
	if !ok || sn.owner != owner {
		return nil, nil, errNoSnapshot(id)
	}
	if sn.mem == nil {
		return nil, func() {}, nil
	}
	sn.used = now
	sn.refs++
	return sn.mem, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		sn.refs--
		if sn.dropped && sn.refs == 0 {
			_ = os.RemoveAll(sn.mem.Dir)
		}
	}, nil
}

// put stores an archive for owner, dropping the least recently used
// snapshots (of any token) to make room.
func (st *snapshotStore) put(owner, session string, archive []byte, now time.Time) (*snapshot, error) {
	size := int64(len(archive))
	if size > st.max {
		return nil, fmt.Errorf("%w: the snapshot is %s, more than the server keeps for all snapshots (%s)", sandbox.ErrTooLarge, units.FormatBytes(size), units.FormatBytes(st.max))
	}
	sn := &snapshot{id: newSnapshotID(), owner: owner, session: session, size: size, created: now, used: now}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.ensureDirLocked(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(st.path(sn.id), archive, 0o600); err != nil {
		return nil, fmt.Errorf("store snapshot: %w", err)
	}
	for st.total+size > st.max {
		st.evictLocked()
	}
	st.items[sn.id] = sn
	st.total += size
	return sn, nil
}

// evictLocked drops the least recently used snapshot.
func (st *snapshotStore) evictLocked() {
	var old *snapshot
	for _, sn := range st.items {
		if old == nil || sn.used.Before(old.used) {
			old = sn
		}
	}
	if old != nil {
		st.dropLocked(old)
	}
}

func (st *snapshotStore) dropLocked(sn *snapshot) {
	delete(st.items, sn.id)
	st.total -= sn.size
	switch {
	case sn.mem == nil:
		_ = os.Remove(st.path(sn.id))
	case sn.refs > 0:
		sn.dropped = true // removed by the last fork's release
	default:
		_ = os.RemoveAll(sn.mem.Dir)
	}
}

// errNoSnapshot: unknown, dropped, or another token's; the same answer for all.
func errNoSnapshot(id string) error {
	return fmt.Errorf("%w: snapshot %s: no such snapshot (it may have been dropped to make room)", api.ErrNotFound, clipPath(id))
}

// get opens owner's snapshot id and marks it used. The archive is read
// from its file as the new session takes it in, never held in memory; an
// eviction meanwhile unlinks the file but leaves the open one readable.
func (st *snapshotStore) get(owner, id string, now time.Time) (*os.File, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	sn, ok := st.items[id]
	if !ok || sn.owner != owner {
		return nil, errNoSnapshot(id)
	}
	sn.used = now
	f, err := os.Open(st.path(id))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errNoSnapshot(id)
		}
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	return f, nil
}

func (st *snapshotStore) remove(owner, id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	sn, ok := st.items[id]
	if !ok || sn.owner != owner {
		return errNoSnapshot(id)
	}
	st.dropLocked(sn)
	return nil
}

func (st *snapshotStore) list(owner string) []api.SessionSnapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := []api.SessionSnapshot{}
	for _, sn := range st.items {
		if sn.owner == owner {
			out = append(out, sn.wire())
		}
	}
	slices.SortFunc(out, func(a, b api.SessionSnapshot) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// close removes every snapshot (the server is shutting down).
func (st *snapshotStore) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, sn := range st.items {
		st.dropLocked(sn)
	}
	if st.dir != "" {
		_ = os.RemoveAll(st.dir)
	}
}

func (sn *snapshot) wire() api.SessionSnapshot {
	return api.SessionSnapshot{ID: sn.id, Session: sn.session, SizeBytes: sn.size, Memory: sn.mem != nil, CreatedAt: sn.created.UTC(), LastUsedAt: sn.used.UTC()}
}
