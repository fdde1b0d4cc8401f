package cgroupstat

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadV1AndV2(t *testing.T) {
	v2, v1, none := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(v2, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n"), 0o644)
	os.WriteFile(filepath.Join(v2, "memory.peak"), []byte("1048576\n"), 0o644)
	os.WriteFile(filepath.Join(v1, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n"), 0o644)
	os.WriteFile(filepath.Join(v1, "memory.max_usage_in_bytes"), []byte("4096\n"), 0o644)
	if n, ok := OOMKills(v2); !ok || n != 2 {
		t.Errorf("v2: %d %v", n, ok)
	}
	if n, ok := OOMKills(v1); !ok || n != 7 {
		t.Errorf("v1: %d %v", n, ok)
	}
	if _, ok := OOMKills(none); ok {
		t.Error("a directory without the files reads as known")
	}
	if PeakBytes(v2) != 1048576 || PeakBytes(v1) != 4096 || PeakBytes(none) != 0 {
		t.Errorf("peaks %d %d %d", PeakBytes(v2), PeakBytes(v1), PeakBytes(none))
	}
}

func TestPidsLimitHits(t *testing.T) {
	hit, none := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(hit, "pids.events"), []byte("max 12\n"), 0o644)
	if n, ok := PidsLimitHits(hit); !ok || n != 12 {
		t.Errorf("pids.events \"max 12\": %d %v", n, ok)
	}
	if _, ok := PidsLimitHits(none); ok {
		t.Error("a directory without pids.events reads as known")
	}
}
