package securitytest

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

// E1: no capabilities, no_new_privs, seccomp filtering, not root.
func (s *suite) e1Status(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|Uid|Gid):' /proc/self/status | tr -d '\\t' | sed 's/:/=/'"}})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if got[c] != "0000000000000000" {
			t.Errorf("%s=%q, want no capabilities", c, got[c])
		}
	}
	if got["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs=%q, want 1", got["NoNewPrivs"])
	}
	if got["Seccomp"] != "2" {
		t.Errorf("Seccomp=%q, want 2 (filter)", got["Seccomp"])
	}
	for _, k := range []string{"Uid", "Gid"} {
		for _, id := range strings.Fields(strings.ReplaceAll(got[k], "\t", " ")) {
			if id == "0" {
				t.Errorf("%s=%q includes root", k, got[k])
			}
		}
		if got[k] == "" {
			t.Errorf("%s missing", k)
		}
	}
}

// E2: a setuid-root binary in the image gains nothing: while it runs, all four
// of its uids are still the sandbox user's.
func (s *suite) e2Setuid(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", `
stat -c 'mode=%a owner=%u' /usr/bin/passwd
echo "me=$(id -u)"
(sleep 3 | /usr/bin/passwd >/dev/null 2>&1) &
sleep 0.7
for p in $(pgrep -x passwd); do echo "uids=$(grep '^Uid:' /proc/$p/status | cut -f2-)"; done
su -c 'id -u' root </dev/null >/dev/null 2>&1; echo "su_exit=$?"
echo "setuid_files=$(find / -xdev -type f -perm /6000 2>/dev/null | wc -l)"
`}, Limits: sandbox.Limits{TimeoutMS: s.slow(20000)}})
	out := string(res.Stdout.Data)
	if s.tgt.StripsSetuid {
		// The image's passwd is setuid root; this runtime's copy must not be.
		if !strings.Contains(out, "mode=755 owner=0") || kv(res)["setuid_files"] != "0" {
			t.Fatalf("setuid/setgid files left in the runtime's copy of the image: %s", short(res))
		}
	} else if !strings.Contains(out, "mode=4755 owner=0") {
		t.Fatalf("the image should carry a setuid-root passwd for this probe: %s", short(res))
	}
	got := kv(res)
	if strings.Fields(got["uids"]) == nil {
		t.Fatalf("could not observe the setuid process: %s", short(res))
	}
	if got["me"] == "" || got["me"] == "0" {
		t.Fatalf("job uid %q: %s", got["me"], short(res))
	}
	for _, id := range strings.Fields(got["uids"]) {
		if id != got["me"] {
			t.Fatalf("setuid binary ran with uids %q, the job's uid is %s", got["uids"], got["me"])
		}
	}
	if got["su_exit"] == "0" {
		t.Fatalf("su succeeded: %s", short(res))
	}
}

// E3: unshare, mount, keyctl, bpf and perf_event_open are refused.
func (s *suite) e3Syscalls(t *testing.T) {
	res := s.py(t, `
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    r = libc.syscall(nr, *args)
    e = ctypes.get_errno()
    print("%s=%s" % (name, "ok" if r >= 0 else errno.errorcode.get(e, str(e))))
call("unshare_user", 272, 0x10000000)            # CLONE_NEWUSER
call("unshare_mount", 272, 0x00020000)           # CLONE_NEWNS
call("mount", 165, b"none", b"/tmp", b"tmpfs", 0, None)
call("keyctl", 250, 0, ctypes.c_long(-3), 1)     # KEYCTL_GET_KEYRING_ID session
call("bpf", 321, 0, None, 0)                     # BPF_MAP_CREATE
attr = ctypes.create_string_buffer(128)
call("perf_event_open", 298, attr, 0, -1, -1, 0)
call("add_key", 248, b"user", b"x", b"y", 1, ctypes.c_long(-3))
call("ptrace_attach_init", 101, 16, 1, None, None)  # PTRACE_ATTACH to PID 1
call("setns", 308, 0, 0)
`, sandbox.Limits{})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	if len(got) != 9 {
		t.Fatalf("probe incomplete: %s", short(res))
	}
	for k, v := range got {
		if v == "ok" {
			t.Errorf("%s succeeded inside the sandbox", k)
		}
	}
}

// E4: no engine socket anywhere in the sandbox.
func (s *suite) e4Socket(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", "find / -xdev \\( -type s -o -name '*.sock' -o -name 'docker*' -o -name 'containerd*' \\) -print 2>/dev/null; for p in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock /run/podman/podman.sock; do [ -e $p ] && echo present=$p; done; true"},
		// A scan of the whole image, as E2's.
		Limits: sandbox.Limits{TimeoutMS: s.slow(30000)}})
	wantStatus(t, res, sandbox.StatusOK)
	for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout.Data)), "\n") {
		if l == "" {
			continue
		}
		// Docker's own man pages or licences are not sockets; anything else is.
		if strings.HasPrefix(l, "present=") || strings.HasSuffix(l, ".sock") {
			t.Errorf("engine socket visible: %s", l)
		}
	}
	if strings.Contains(string(res.Stdout.Data), "present=") {
		t.Fatalf("engine socket present: %s", short(res))
	}
}

// E5: sensitive /proc and /sys entries are masked or read-only.
func (s *suite) e5Masked(t *testing.T) {
	res := s.py(t, `
import errno, os
def read(p):
    try:
        with open(p, "rb") as f:
            return "len%d" % len(f.read(4096))
    except OSError as e:
        return errno.errorcode.get(e.errno)
def write(p):
    try:
        with open(p, "w") as f:
            f.write("h")
        return "written"
    except OSError as e:
        return errno.errorcode.get(e.errno)
print("kcore=%s" % read("/proc/kcore"))
print("keys=%s" % read("/proc/keys"))
print("sysrq=%s" % write("/proc/sysrq-trigger"))
print("sysrq_read=%s" % read("/proc/sysrq-trigger"))
try:
    print("firmware=%d" % len(os.listdir("/sys/firmware")))
except OSError as e:
    print("firmware=%s" % errno.errorcode.get(e.errno))
print("sys_kernel=%s" % write("/proc/sys/kernel/hostname"))
print("core_pattern=%s" % write("/proc/sys/kernel/core_pattern"))
`, sandbox.Limits{})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	if v := got["kcore"]; v != "len0" && v != "EACCES" && v != "EPERM" && v != "ENOENT" {
		t.Errorf("/proc/kcore readable: %s", v)
	}
	if v := got["keys"]; v != "len0" && v != "EACCES" && v != "EPERM" && v != "ENOENT" {
		t.Errorf("/proc/keys readable: %s", v)
	}
	if v := got["sysrq"]; v == "written" {
		t.Errorf("/proc/sysrq-trigger writable")
	}
	if v := got["firmware"]; v != "0" && v != "EACCES" && v != "ENOENT" {
		t.Errorf("/sys/firmware not masked: %s", v)
	}
	for _, k := range []string{"sys_kernel", "core_pattern"} {
		if got[k] == "written" || got[k] == "" {
			t.Errorf("%s: %q, want refused", k, got[k])
		}
	}
}

// E6: cgroup release_agent cannot be written.
func (s *suite) e6ReleaseAgent(t *testing.T) {
	res := s.py(t, `
import errno, os
found = 0
for root, dirs, files in os.walk("/sys/fs/cgroup"):
    for f in files:
        if f in ("release_agent", "notify_on_release", "cgroup.procs"):
            p = os.path.join(root, f)
            found += 1
            try:
                with open(p, "w") as fh:
                    fh.write("/work/evil" if f == "release_agent" else "1")
                print("%s=written" % p)
            except OSError as e:
                print("%s=%s" % (p, errno.errorcode.get(e.errno)))
print("found=%d" % found)
`, sandbox.Limits{})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	for k, v := range got {
		if v == "written" {
			t.Errorf("%s written", k)
		}
	}
	if got["found"] == "0" || got["found"] == "" {
		t.Log("no cgroup control files visible at all (fine: nothing to write)")
	}
}

// E7: the environment holds exactly what the caller passed (plus PATH, HOME,
// LANG defaults) — never the host's variables, tokens or keys.
func (s *suite) e7Env(t *testing.T) {
	// Secrets in the host process's environment (the suite runs in parallel,
	// so not t.Setenv).
	for k, v := range map[string]string{"ASTER_TEST_HOST_SECRET": "ghp_hostsecret0123456789", "ASTER_TEST_GITHUB_TOKEN": "ghs_hosttoken0123456789"} {
		os.Setenv(k, v)
		t.Cleanup(func() { os.Unsetenv(k) })
	}
	res := s.run(t, sandbox.Spec{
		Argv: []string{"sh", "-c", "env | cut -d= -f1 | sort; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n' | grep -c . >/dev/null; true"},
		Env:  map[string]string{"FOO": "bar"},
	})
	wantStatus(t, res, sandbox.StatusOK)
	keys := strings.Fields(string(res.Stdout.Data))
	sort.Strings(keys)
	want := []string{"FOO", "HOME", "LANG", "PATH", "PWD"}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("environment keys %v, want %v", keys, want)
	}
	if strings.Contains(string(res.Stdout.Data), "ghp_") || strings.Contains(string(res.Stdout.Data), "ghs_") {
		t.Fatal("host secret leaked into the sandbox")
	}
	// init's own environment (what the engine gave PID 1) is not readable by
	// the job: init is not dumpable.
	res = s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", "cat /proc/1/environ >/dev/null 2>&1 && echo readable || echo refused"}})
	if strings.TrimSpace(string(res.Stdout.Data)) != "refused" {
		t.Fatalf("/proc/1/environ readable by the job: %s", short(res))
	}
}
