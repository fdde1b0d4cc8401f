package securitytest

import (
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

// Adapted cases: the form of a case that a runtime with a kernel of its own
// (gVisor's sentry, a VM's guest kernel) can meet, where the form in Run
// depends on how Linux itself answers. A runtime's Target.Replaced points
// the case of Run at its adapted form here, and its test file runs that form
// with RunAdapted.
var adaptedCases = map[string]func(s *suite, t *testing.T){
	"B2_memory_oom_whole_sandbox": (*suite).b2WholeSandbox,
	"B5_readonly_root_refused":    (*suite).b5Refused,
	"B6_files_bounded_by_memory":  (*suite).b6BoundedByMemory,
}

// RunAdapted runs the named adapted cases against the target, each followed
// by a normal job, as in Run.
func RunAdapted(t *testing.T, tgt Target, names ...string) {
	s := newSuite(t, tgt)
	for _, name := range names {
		fn, ok := adaptedCases[name]
		if !ok {
			t.Fatalf("no adapted case %q", name)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(s, t)
			s.assertHealthy(t)
		})
	}
}

// B2, where the sandbox's kernel is one host process (gVisor's sentry): past
// the memory limit the host's OOM killer ends that process, so the sandbox
// ends as a whole and no signal of the job is seen. The verdict is still
// oom (the host reads the sandbox's cgroup), the output that had reached the
// host is kept, and a job beside it is unaffected.
func (s *suite) b2WholeSandbox(t *testing.T) {
	res := s.memoryHog(t)
	wantOOMWithOutput(t, res)
	s.assertGone(t, res.ID)
}

// B5, where the sandbox's kernel checks permissions before the mount's
// read-only flag (gVisor answers EACCES where Linux answers EROFS for a
// file the job may not write anyway): every write to the root fails with
// one of the two, and the root mount is read-only.
func (s *suite) b5Refused(t *testing.T) {
	res := s.py(t, rootWrites("/x", "/usr/x", "/etc/x", "/bin/x", "/var/x", "/etc/passwd")+`
for line in open("/proc/mounts"):
    f = line.split()
    if f[1] == "/":
        print("root_opts=%s" % f[3].split(",")[0])
`, sandbox.Limits{})
	wantStatus(t, res, sandbox.StatusOK)
	got := kv(res)
	if len(got) != 8 {
		t.Fatalf("probe incomplete: %s", short(res))
	}
	for k, v := range got {
		switch {
		case k == "root_opts":
			if v != "ro" {
				t.Errorf("root mounted %q, want ro", v)
			}
		case v != "EROFS" && v != "EACCES":
			t.Errorf("%s: %s, want EROFS or EACCES", k, v)
		}
	}
}

// B6, where tmpfs has no inode cap (gVisor ignores nr_inodes): a million
// tiny files end inside the sandbox — at /work's size or the memory limit,
// whichever comes first — and a 10 GB fallocate fails with ENOSPC at /tmp's
// size. /work and /tmp are tmpfs inside the sandbox's kernel, so their pages
// are the sandbox's memory, never the host's disk.
func (s *suite) b6BoundedByMemory(t *testing.T) {
	l := sandbox.DefaultLimits()
	l.TimeoutMS = 120000
	files := s.run(t, sandbox.Spec{Argv: []string{"python3", "-c", mountProbe + `
print("work_type=%s" % fsinfo("/work")[0], flush=True)
n = 0
try:
    for i in range(1000000):
        os.close(os.open("/work/f%d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
        n += 1
    print("files=%d" % n)
except OSError as e:
    print("files=%d" % n)
    print("files_error=%s" % errno.errorcode.get(e.errno))
`}, Limits: l})
	got := kv(files)
	if got["work_type"] != "tmpfs" {
		t.Errorf("/work is %q, want tmpfs: %s", got["work_type"], short(files))
	}
	switch files.Status {
	case sandbox.StatusOOM: // the files' memory reached the limit
	case sandbox.StatusOK:
		if got["files_error"] != "ENOSPC" && got["files_error"] != "ENOMEM" {
			t.Fatalf("a million files neither failed inside the sandbox nor ended it at the memory limit: %s", short(files))
		}
	default:
		t.Fatalf("a million files: %s", short(files))
	}
	s.assertGone(t, files.ID)
	big := s.run(t, sandbox.Spec{Argv: []string{"python3", "-c", mountProbe + fallocateTmp}, Limits: l})
	wantStatus(t, big, sandbox.StatusOK)
	got = kv(big)
	if got["fallocate"] != "ENOSPC" || got["tmp_type"] != "tmpfs" || num(got, "tmp_total") > l.TmpBytes {
		t.Fatalf("10 GB fallocate into a %d-byte /tmp: %v", l.TmpBytes, got)
	}
}
