package microvm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandbox/securitytest"
)

// TestLiveSandboxSettings (SECURITY.md A on microvm) inspects one live VM
// from the host — the QEMU process, its command line, its descriptors, its
// cgroup, the run's record — and then, from inside, what the job is given.
func TestLiveSandboxSettings(t *testing.T) {
	opts := microvmtest.Options(t)
	rt := microvmtest.New(t, opts)
	ctx := t.Context()
	limits := sandbox.DefaultLimits()
	runID := sandbox.NewRunID()
	deadline := time.Now().Add(3 * time.Minute).Truncate(time.Second)
	inst, err := rt.Prepare(ctx, sandbox.PrepareOptions{RunID: runID, Image: sandboxtest.Image(), Limits: limits, Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())

	// A6: the record names the run and its deadline; the reaper reads it.
	var rec struct {
		ID       string    `json:"id"`
		RunID    string    `json:"run_id"`
		Deadline time.Time `json:"deadline"`
		PID      int       `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(opts.StateDir, "runs", inst.ID()+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.RunID != runID || !rec.Deadline.Equal(deadline) || rec.PID <= 0 {
		t.Fatalf("record %+v, want run %s, deadline %s and a pid", rec, runID, deadline)
	}
	pid := rec.PID

	// A1, A4: QEMU is not root, has no capability, and filters its own syscalls.
	status := procStatus(t, pid)
	for _, k := range []string{"Uid", "Gid"} {
		for _, f := range strings.Fields(status[k]) {
			if f == "0" {
				t.Errorf("QEMU %s %q: root", k, status[k])
			}
		}
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if k == "CapBnd" {
			continue // the bounding set is inherited; with no uid 0 and no file capabilities it grants nothing
		}
		if status[k] != "0000000000000000" {
			t.Errorf("QEMU %s=%q, want none", k, status[k])
		}
	}
	if status["Seccomp"] != "2" {
		t.Errorf("QEMU Seccomp=%q, want 2 (-sandbox on)", status["Seccomp"])
	}

	// A2, A5: no network device, no defaults, the image disk read-only, the
	// sandbox option with everything denied; nothing else on the line.
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	line := strings.Join(args, " ")
	for _, want := range []string{"-nic none", "-nodefaults", "-no-user-config", "-monitor none",
		"-sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", "readonly=on"} {
		if !strings.Contains(line, want) {
			t.Errorf("QEMU command line lacks %q: %s", want, line)
		}
	}
	for _, bad := range []string{"-netdev", "-net ", "vhost", "virtio-net", "-virtfs", "-fsdev", "9p", "-qmp", "-gdb", "hostfwd", "vfio"} {
		if strings.Contains(line, bad) {
			t.Errorf("QEMU command line has %q: %s", bad, line)
		}
	}

	// A5: QEMU holds descriptors, no path into the host: the disk read-only,
	// no directory, no engine socket.
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	sawDisk := false
	for _, e := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if strings.Contains(target, "docker.sock") || strings.Contains(target, "containerd") {
			t.Errorf("QEMU fd %s: %s", e.Name(), target)
		}
		if fi, err := os.Stat(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil && fi.IsDir() {
			t.Errorf("QEMU fd %s is a directory: %s", e.Name(), target)
		}
		if strings.HasSuffix(target, ".img") && strings.Contains(filepath.Base(target), ".ext4-") {
			sawDisk = true
			if flags := fdFlags(t, pid, e.Name()); flags&0o3 != 0 {
				t.Errorf("the image disk %s is open for writing (flags %o)", target, flags)
			}
		}
	}
	if !sawDisk {
		t.Errorf("QEMU holds no image disk (%d descriptors)", len(fds))
	}

	// A3: the host cgroup holds QEMU with guest RAM + QEMU's own, the CPU
	// quota and the task cap.
	cg := hostCgroupOf(t, pid)
	wantMem := limits.MemoryBytes + microvm.GuestOverheadBytes + microvm.HostOverheadBytes
	if got := cgroupValue(t, cg, "memory.max", "memory.limit_in_bytes"); got != strconv.FormatInt(wantMem, 10) {
		t.Errorf("host memory limit %s, want %d", got, wantMem)
	}
	if got := cgroupValue(t, cg, "pids.max", "pids.max"); got != "256" {
		t.Errorf("host pids.max %s, want 256", got)
	}
	if got := cgroupValue(t, cg, "cpu.max", "cpu.cfs_quota_us"); !strings.HasPrefix(got, strconv.FormatInt(limits.MilliCPUs*100, 10)) {
		t.Errorf("host CPU quota %q, want %d per 100 ms", got, limits.MilliCPUs*100)
	}

	// Inside: the job's uid, capabilities, seccomp, mounts, devices and
	// interfaces, and its rlimits.
	script := strings.Join([]string{
		"id -u",
		"grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t'",
		"awk '$2==\"/\"||$2==\"/work\"||$2==\"/tmp\"{print $2, $3, $4}' /proc/mounts",
		"ls /sys/class/net",
		"ls /dev",
		"ulimit -n; ulimit -c",
	}, "; echo --; ")
	res, err := inst.Run(ctx, sandbox.Job{Argv: []string{"sh", "-c", script}, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(res.Stdout.Data), "--\n")
	if len(parts) != 6 {
		t.Fatalf("inside: %q (stderr %q)", res.Stdout.Data, res.Stderr.Data)
	}
	if uid := strings.TrimSpace(parts[0]); uid == "0" || uid == "" {
		t.Errorf("the job's uid is %q", uid)
	}
	if got := parts[1]; got != "CapEff:0000000000000000\nNoNewPrivs:1\nSeccomp:2\n" {
		t.Errorf("inside status %q, want no capabilities, no_new_privs and a seccomp filter", got)
	}
	mounts := map[string][2]string{}
	for _, l := range strings.Split(strings.TrimSpace(parts[2]), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			mounts[f[0]] = [2]string{f[1], f[2]}
		}
	}
	if !strings.HasPrefix(mounts["/"][1], "ro") {
		t.Errorf("/ mounted %v, want read-only", mounts["/"])
	}
	for dir, size := range map[string]int64{"/work": limits.WorkdirBytes, "/tmp": limits.TmpBytes} {
		m := mounts[dir]
		if m[0] != "tmpfs" || !strings.Contains(m[1], "size="+strconv.FormatInt(size>>10, 10)+"k") {
			t.Errorf("%s mounted %v, want a tmpfs of %d KiB", dir, m, size>>10)
		}
		if !strings.Contains(m[1], "nosuid") || !strings.Contains(m[1], "nodev") {
			t.Errorf("%s mounted %v, want nosuid,nodev", dir, m)
		}
	}
	if got := strings.Fields(parts[3]); len(got) != 1 || got[0] != "lo" {
		t.Errorf("interfaces %q, want only lo", got)
	}
	for _, d := range strings.Fields(parts[4]) {
		if strings.HasPrefix(d, "vd") || strings.HasPrefix(d, "vport") || strings.HasPrefix(d, "hvc") || d == "mem" || d == "kmsg" || d == "port" {
			t.Errorf("/dev/%s is visible to the job", d)
		}
	}
	if got := strings.Fields(parts[5]); len(got) != 2 || got[0] != "1024" || got[1] != "0" {
		t.Errorf("rlimits nofile, core %q, want 1024 0", got)
	}
}

// TestNoRequestCanRelaxHardening (SECURITY.md A) prepares a VM with the most
// permissive limits a request may ask for: inside, the job is as confined as
// ever. The shared form checks for a uid from the host's identity range; a
// guest's uids are its own kernel's, so this form checks for the guest's
// job uid instead.
func TestNoRequestCanRelaxHardening(t *testing.T) {
	rt := microvmtest.Runtime(t)
	res := securitytest.RunMostPermissive(t, rt, sandboxtest.Image(), sandbox.NewRunID(), 2000, "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t'; ls /sys/class/net; touch /etc/x 2>&1 | grep -c 'Read-only'")
	want := "1000\nCapEff:0000000000000000\nNoNewPrivs:1\nSeccomp:2\nlo\n1\n"
	if got := string(res.Stdout.Data); got != want {
		t.Fatalf("hardening relaxed by limits: got %q, want %q (stderr %q)", got, want, res.Stderr.Data)
	}
}

func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// fdFlags is the open flags of descriptor fd of pid (fdinfo, octal).
func fdFlags(t *testing.T, pid int, fd string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("fdinfo of %d/%s has no flags", pid, fd)
	return 0
}

// hostCgroupOf returns the cgroup directories (one on v2, one per
// controller on v1) pid is in, under the microvm parent.
func hostCgroupOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 || !strings.Contains(f[2], "aster-microvm/") {
			continue
		}
		if f[1] == "" {
			dirs["v2"] = filepath.Join("/sys/fs/cgroup", f[2])
		}
		for _, ctl := range strings.Split(f[1], ",") {
			dirs[ctl] = filepath.Join("/sys/fs/cgroup", ctl, f[2])
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("QEMU %d is in no aster-microvm cgroup: %s", pid, b)
	}
	return dirs
}

// cgroupValue reads a limit: the v2 file, else the v1 one of its controller.
func cgroupValue(t *testing.T, dirs map[string]string, v2, v1 string) string {
	t.Helper()
	p := filepath.Join(dirs["v2"], v2)
	if _, ok := dirs["v2"]; !ok {
		ctl, _, _ := strings.Cut(v1, ".")
		p = filepath.Join(dirs[ctl], v1)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
