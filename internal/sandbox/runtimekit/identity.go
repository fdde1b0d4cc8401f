package runtimekit

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/asterhq/aster/internal/sandbox"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Identity is the pair of host user ids one sandbox runs under: aster-init runs
// as Init, the job as Job (uid and gid alike). Both belong to that sandbox alone
// while it exists, so per-user kernel quotas (inotify instances, POSIX message
// queue bytes, process counts) are never shared with another sandbox or with a
// host account, and the job cannot signal, ptrace or prlimit its init.
type Identity struct {
	Init, Job int
	release   func()
}

// Release returns the ids to the pool. Safe to call more than once.
func (id *Identity) Release() {
	if id != nil && id.release != nil {
		id.release()
		id.release = nil
	}
}

// Flag is aster-init's -ids argument for this identity.
func (id Identity) Flag() string { return fmt.Sprintf("-ids=%d:%d", id.Init, id.Job) }

// Default range of sandbox ids: far above any account a distribution or a
// directory service hands out, below 2^31 so that programs storing a uid in a
// signed int still work.
const (
	DefaultIdentityBase  = 1_900_000_000
	DefaultIdentitySlots = 32768
)

// IdentityPoolOptions configure an IdentityPool.
type IdentityPoolOptions struct {
	// Base is the first uid of the range; Slots pairs follow it (2*Slots ids).
	Base, Slots int
	// LeaseDir holds one lock file per slot in use, shared by every Aster
	// process on this host ("" picks /run/aster/ids, or a per-user directory
	// under the temp dir when that is not writable).
	LeaseDir string
	// PasswdFiles are checked for accounts inside the range (default
	// /etc/passwd, /etc/group, /etc/subuid, /etc/subgid).
	PasswdFiles []string
}

// IdentityPool hands out Identities. A slot is leased with an flock on its own
// file, so every Aster process on the host (an `aster exec` beside a server)
// sees the same leases, and a crashed process's leases end with it.
type IdentityPool struct {
	base, slots int
	dir         string

	mu   sync.Mutex
	held map[int]*os.File
}

// NewIdentityPool checks the range against the host's accounts and prepares
// the lease directory.
func NewIdentityPool(o IdentityPoolOptions) (*IdentityPool, error) {
	if o.Base == 0 {
		o.Base = DefaultIdentityBase
	}
	if o.Slots == 0 {
		o.Slots = DefaultIdentitySlots
	}
	if o.Base < 1 || o.Slots < 1 || int64(o.Base)+2*int64(o.Slots) > 1<<31-1 {
		return nil, fmt.Errorf("sandbox id range %d+2×%d is outside 1..2^31-1", o.Base, o.Slots)
	}
	if o.PasswdFiles == nil {
		o.PasswdFiles = []string{"/etc/passwd", "/etc/group", "/etc/subuid", "/etc/subgid"}
	}
	hi := o.Base + 2*o.Slots - 1
	for _, f := range o.PasswdFiles {
		if err := checkAccounts(f, o.Base, hi); err != nil {
			return nil, err
		}
	}
	dir := o.LeaseDir
	if dir == "" {
		dir = "/run/aster/ids"
		if err := os.MkdirAll(dir, 0o700); err != nil {
			dir = filepath.Join(os.TempDir(), fmt.Sprintf("aster-ids-%d", os.Getuid()))
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox id leases: %w", err)
	}
	return &IdentityPool{base: o.Base, slots: o.Slots, dir: dir, held: map[int]*os.File{}}, nil
}

// Acquire leases a free slot.
func (p *IdentityPool) Acquire() (Identity, error) {
	start := rand.IntN(p.slots)
	for k := range min(p.slots, 4096) {
		slot := (start + k) % p.slots
		p.mu.Lock()
		_, busy := p.held[slot]
		p.mu.Unlock()
		if busy {
			continue
		}
		f, err := os.OpenFile(filepath.Join(p.dir, strconv.Itoa(slot)), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return Identity{}, fmt.Errorf("sandbox id lease: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue
			}
			return Identity{}, fmt.Errorf("sandbox id lease: %w", err)
		}
		p.mu.Lock()
		p.held[slot] = f
		p.mu.Unlock()
		id := Identity{Init: p.base + 2*slot, Job: p.base + 2*slot + 1}
		var once sync.Once
		id.release = func() {
			once.Do(func() {
				p.mu.Lock()
				delete(p.held, slot)
				p.mu.Unlock()
				f.Close() // ends the flock
			})
		}
		return id, nil
	}
	return Identity{}, fmt.Errorf("%w: no free sandbox id in %d tries", sandbox.ErrBusy, min(p.slots, 4096))
}

// InUse is the number of slots this pool holds now.
func (p *IdentityPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// checkAccounts refuses a range that overlaps an id named in a passwd-, group-
// or subid-style file (name:x:id:… or name:start:count).
func checkAccounts(file string, lo, hi int) error {
	f, err := os.Open(file)
	if err != nil {
		return nil // a host without the file has no such accounts
	}
	defer f.Close()
	sub := strings.HasPrefix(filepath.Base(file), "sub")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		var from, to int
		switch {
		case sub && len(fields) >= 3:
			start, err1 := strconv.Atoi(fields[1])
			n, err2 := strconv.Atoi(fields[2])
			if err1 != nil || err2 != nil || n < 1 {
				continue
			}
			from, to = start, start+n-1
		case !sub && len(fields) >= 3:
			id, err := strconv.Atoi(fields[2])
			if err != nil {
				continue
			}
			from, to = id, id
		default:
			continue
		}
		if from <= hi && to >= lo {
			return fmt.Errorf("sandbox id range %d–%d overlaps %q in %s: choose another range (sandbox id base)", lo, hi, fields[0], file)
		}
	}
	return nil
}
