package oci_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/hardening"
	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandbox/securitytest"
)

// TestSecurity runs SECURITY.md sections B–F against the oci runtime.
func TestSecurity(t *testing.T) {
	opts := ocitest.Options(t)
	rt := ocitest.New(t, opts)
	securitytest.Run(t, securitytest.Target{Runtime: rt, Image: sandboxtest.Image(), StripsSetuid: true, Footprint: footprint(opts)})
}

// footprint measures a live sandbox's host storage: its run directory
// (bundle, record) and the runtime binary's state for it. The root
// filesystem is the shared image cache, mounted read-only.
func footprint(opts oci.Options) func(ctx context.Context, id string) (securitytest.Footprint, error) {
	return func(_ context.Context, id string) (securitytest.Footprint, error) {
		roots, err := filepath.Glob(filepath.Join(opts.StateDir, "*", id))
		if err != nil {
			return securitytest.Footprint{}, err
		}
		if len(roots) == 0 {
			return securitytest.Footprint{}, fmt.Errorf("no state of sandbox %s under %s", id, opts.StateDir)
		}
		return securitytest.DirFootprint(roots...)
	}
}

// live is a prepared sandbox inspected from the host: its bundle, its init
// process and its cgroups.
type live struct {
	spec    specs.Spec
	pid     int
	cgroups map[string]string // controller (or "" on v2) -> path below /sys/fs/cgroup
}

func inspect(t *testing.T, opts oci.Options, id string) live {
	t.Helper()
	dir := filepath.Join(opts.StateDir, "runs", id)
	var l live
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatalf("bundle of a live sandbox: %v", err)
	}
	if err := json.Unmarshal(b, &l.spec); err != nil {
		t.Fatal(err)
	}
	// The runtime writes the pid file once the container has started, which
	// may be a moment after init has said hello.
	var pb []byte
	for wait := time.Now().Add(10 * time.Second); ; {
		if pb, err = os.ReadFile(filepath.Join(dir, "init.pid")); err == nil || time.Now().After(wait) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.pid, err = strconv.Atoi(strings.TrimSpace(string(pb))); err != nil {
		t.Fatal(err)
	}
	l.cgroups = map[string]string{}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", l.pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			l.cgroups[c] = parts[2]
		}
	}
	return l
}

func (l live) proc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", l.pid, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cgroupFile reads a file of the sandbox's cgroup on v1 (controller dir) or v2.
func (l live) cgroupFile(controller, v1name, v2name string) (string, bool) {
	if p, ok := l.cgroups[controller]; ok && p != "" {
		if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", controller, p, v1name)); err == nil {
			return strings.TrimSpace(string(b)), true
		}
	}
	if p, ok := l.cgroups[""]; ok && v2name != "" {
		if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", p, v2name)); err == nil {
			return strings.TrimSpace(string(b)), true
		}
	}
	return "", false
}

func statusField(status, key string) string {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestLiveSandboxSettings is SECURITY.md section A for the oci runtime: the
// settings of a live sandbox, read from the host — the kernel's view of its
// init process, its mounts and its cgroups, not only the bundle we wrote.
func TestLiveSandboxSettings(t *testing.T) {
	opts := ocitest.Options(t)
	rt := ocitest.New(t, opts)
	ctx := t.Context()
	limits := sandbox.DefaultLimits()
	id := sandbox.NewRunID()
	inst, err := rt.Prepare(ctx, sandbox.PrepareOptions{RunID: id, Image: sandboxtest.Image(), Limits: limits, Deadline: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	l := inspect(t, opts, inst.ID())
	status := l.proc(t, "status")

	// A1: not privileged; no capabilities but aster-init's CAP_SETUID,
	// CAP_SETGID and CAP_SETPCAP until it has forked the job (the job's side
	// is E1), with the bounding, inheritable and ambient sets already empty;
	// no-new-privileges; seccomp filtering; AppArmor not unconfined where
	// AppArmor is on.
	for _, k := range []string{"CapInh", "CapBnd", "CapAmb"} {
		if v := statusField(status, k); v != "0000000000000000" {
			t.Errorf("A1: %s = %s", k, v)
		}
	}
	for _, k := range []string{"CapPrm", "CapEff"} {
		if v, err := strconv.ParseUint(statusField(status, k), 16, 64); err != nil || v&^0x1c0 != 0 {
			t.Errorf("A1: %s = %s, want at most SETUID|SETGID|SETPCAP", k, statusField(status, k))
		}
	}
	if v := statusField(status, "NoNewPrivs"); v != "1" {
		t.Errorf("A1: NoNewPrivs = %s", v)
	}
	if v := statusField(status, "Seccomp"); v != "2" {
		t.Errorf("A1: Seccomp = %s, want 2 (filter)", v)
	}
	if aa, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil && strings.HasPrefix(string(aa), "Y") {
		if cur := strings.TrimSpace(l.proc(t, "attr/current")); strings.HasPrefix(cur, "unconfined") {
			t.Errorf("A1: AppArmor %q", cur)
		}
	}
	if c := l.spec.Process.Capabilities; c == nil || !slices.Equal(c.Bounding, oci.InitCapabilities) || !slices.Equal(c.Effective, oci.InitCapabilities) ||
		!slices.Equal(c.Permitted, oci.InitCapabilities) || !slices.Equal(c.Ambient, oci.InitCapabilities) {
		t.Errorf("A1: bundle capabilities %+v, want only %v", c, oci.InitCapabilities)
	}
	// aster-init's effective uid is the job's (see cmd/aster-init/identity.go).
	var jobUID uint32
	if uids := strings.Fields(statusField(status, "Uid")); len(uids) == 4 {
		n, _ := strconv.ParseUint(uids[1], 10, 32)
		jobUID = uint32(n)
	}
	// M1: the bundle carries the Aster profile, the bytes the docker runtime
	// sends its engine.
	profile, err := hardening.SeccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := json.Marshal(l.spec.Linux.Seccomp); err != nil || string(got) != string(profile) {
		t.Errorf("M1: the bundle's seccomp section is not the Aster profile (%v)", err)
	}

	// A2: read-only root; every tmpfs has a size; network none (only lo).
	mounts := l.proc(t, "mountinfo")
	var tmpfs int
	sc := bufio.NewScanner(strings.NewReader(mounts))
	type mnt struct{ root, point, opts, optional, fstype, source, super string }
	var all []mnt
	for sc.Scan() {
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 6 || len(rf) < 3 {
			continue
		}
		m := mnt{root: lf[3], point: lf[4], opts: lf[5], optional: strings.Join(lf[6:], " "), fstype: rf[0], source: rf[1], super: rf[2]}
		all = append(all, m)
		if m.point == "/" && !strings.Contains(","+m.opts+",", ",ro,") {
			t.Errorf("A2: root mounted %s", m.opts)
		}
		if m.fstype == "tmpfs" {
			tmpfs++
			// Every tmpfs the job can write to has a size. (runc mounts the
			// masked directories and the /sys/fs/cgroup skeleton as tmpfs
			// without one: read-only, or root's and not writable by others.)
			if !strings.Contains(m.super, "size=") && !strings.Contains(","+m.opts+",", ",ro,") && writableByJob(t, l.pid, m.point, jobUID) {
				t.Errorf("A2: writable tmpfs %s without a size: %s", m.point, m.super)
			}
			if (m.point == "/work" || m.point == "/tmp") && !strings.Contains(m.super, "nr_inodes=") {
				t.Errorf("A2: tmpfs %s without an inode cap: %s", m.point, m.super)
			}
		}
	}
	if tmpfs < 2 {
		t.Errorf("A2: %d tmpfs mounts", tmpfs)
	}
	var ifaces []string
	for _, line := range strings.Split(l.proc(t, "net/dev"), "\n")[2:] {
		if name, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			ifaces = append(ifaces, name)
		}
	}
	if len(ifaces) != 1 || ifaces[0] != "lo" {
		t.Errorf("A2: network interfaces %v, want only lo", ifaces)
	}

	// A3: memory limit with swap equal to it; CPU quota; pids limit.
	if v, ok := l.cgroupFile("memory", "memory.limit_in_bytes", "memory.max"); !ok || v != strconv.FormatInt(limits.MemoryBytes, 10) {
		t.Errorf("A3: memory limit %q (found %v), want %d", v, ok, limits.MemoryBytes)
	}
	if v, ok := l.cgroupFile("memory", "memory.memsw.limit_in_bytes", ""); ok && v != strconv.FormatInt(limits.MemoryBytes, 10) {
		t.Errorf("A3: memory+swap limit %q, want %d (no swap)", v, limits.MemoryBytes)
	} else if !ok {
		if v, ok := l.cgroupFile("memory", "", "memory.swap.max"); ok && v != "0" {
			t.Errorf("A3: swap %q, want 0", v)
		}
	}
	if v, ok := l.cgroupFile("cpu", "cpu.cfs_quota_us", "cpu.max"); !ok || v == "-1" || strings.HasPrefix(v, "max") {
		t.Errorf("A3: no CPU quota (%q)", v)
	}
	if v, ok := l.cgroupFile("pids", "pids.max", "pids.max"); !ok || v != strconv.FormatInt(limits.Pids, 10) {
		t.Errorf("A3: pids.max %q, want %d", v, limits.Pids)
	}
	limitsFile := l.proc(t, "limits")
	if !strings.Contains(limitsFile, "Max core file size        0                    0") {
		t.Errorf("A3: core limit not 0:\n%s", limitsFile)
	}
	if !strings.Contains(limitsFile, "Max open files            1024                 1024") {
		t.Errorf("A3: nofile not capped:\n%s", limitsFile)
	}

	// A4: not root; no host pid/ipc/uts/net/mount/cgroup namespace. (The
	// user namespace is the host's, as under Docker without userns-remap;
	// init and the job have uids of their own, with no capabilities.)
	if uid := strings.Fields(statusField(status, "Uid")); len(uid) == 0 || uid[0] == "0" || uid[1] == "0" {
		t.Errorf("A4: uid %v", uid)
	}
	for _, ns := range []string{"pid", "ipc", "uts", "net", "mnt", "cgroup"} {
		mine, err1 := os.Readlink("/proc/self/ns/" + ns)
		theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", l.pid, ns))
		if err1 != nil || err2 != nil || mine == theirs {
			t.Errorf("A4: %s namespace shared with the host (%s, %v %v)", ns, theirs, err1, err2)
		}
	}

	// A5: nothing of the host mounted but the read-only image root and the
	// read-only aster-init; no engine socket; no shared propagation; the
	// device cgroup denies everything but the usual character devices.
	for _, m := range all {
		if strings.Contains(m.optional, "shared:") {
			t.Errorf("A5: %s has shared propagation (%s)", m.point, m.optional)
		}
		if strings.Contains(m.root, ".sock") || strings.Contains(m.point, ".sock") {
			t.Errorf("A5: socket mounted: %+v", m)
		}
		if !strings.HasPrefix(m.source, "/dev/") {
			continue // proc, sysfs, tmpfs, cgroup, devpts, mqueue: not the host's files
		}
		switch {
		case m.point == "/" || m.point == oci.InitMountPath:
			if !strings.Contains(","+m.opts+",", ",ro,") {
				t.Errorf("A5: %s is mounted %s", m.point, m.opts)
			}
		case m.fstype == "devtmpfs" && strings.HasPrefix(m.point, "/proc/"):
			// masked paths: /dev/null bound over them
		default:
			t.Errorf("A5: host filesystem mounted: %s from %s (%s)", m.point, m.root, m.fstype)
		}
	}
	if v, ok := l.cgroupFile("devices", "devices.list", ""); ok && strings.Contains(v, "a *:* rwm") {
		t.Errorf("A5: device cgroup allows everything")
	}
	devs, err := os.ReadDir(fmt.Sprintf("/proc/%d/root/dev", l.pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		switch d.Name() {
		case "null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm", "mqueue", "fd", "stdin", "stdout", "stderr", "core", "console":
		default:
			t.Errorf("A5: unexpected device /dev/%s", d.Name())
		}
	}

	// A6: labels (annotations) present; output only through the init protocol
	// (no log file anywhere in the bundle).
	for _, a := range []string{oci.AnnotationManaged, oci.AnnotationRun, oci.AnnotationDeadline} {
		if l.spec.Annotations[a] == "" {
			t.Errorf("A6: annotation %s missing", a)
		}
	}
	list, err := rt.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range list {
		if m.ID == inst.ID() {
			found = m.RunID == id && !m.Deadline.IsZero() && m.State == "running"
		}
	}
	if !found {
		t.Errorf("A6: the runtime does not list the live sandbox with its run and deadline: %+v", list)
	}

	// The inspected sandbox still runs its one job normally.
	res, err := inst.Run(ctx, sandbox.Job{Argv: []string{"echo", "ok"}, Limits: limits})
	if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout.Data) != "ok\n" {
		t.Fatalf("job after inspection: %v %+v", err, res.Wire())
	}
}

// TestNoRequestCanRelaxHardening feeds the runtime the most permissive limits
// the API accepts and checks the sandbox is hardened all the same.
func TestNoRequestCanRelaxHardening(t *testing.T) {
	rt := ocitest.Runtime(t)
	securitytest.NoRequestCanRelaxHardening(t, rt, sandboxtest.Image(), "r-relax-"+strconv.Itoa(os.Getpid()))
}

// writableByJob says whether the sandbox's uid could write to a directory of
// the sandbox (it has no capabilities, so only ownership and mode count).
func writableByJob(t *testing.T, pid int, dir string, uid uint32) bool {
	t.Helper()
	fi, err := os.Stat(fmt.Sprintf("/proc/%d/root%s", pid, dir))
	if err != nil {
		t.Fatalf("stat %s in the sandbox: %v", dir, err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid == uid || fi.Mode().Perm()&0o002 != 0 || (st.Gid == uid && fi.Mode().Perm()&0o020 != 0)
}
