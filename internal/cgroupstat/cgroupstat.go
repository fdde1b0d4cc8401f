// Package cgroupstat reads a memory cgroup's OOM kill count and peak use (and
// a cgroup's CPU time, for runtimes whose sandbox cannot count it), for
// the host (its view of a sandbox's cgroup, the verdict) and for aster-init
// (its own report, where the host cannot read the cgroup).
package cgroupstat

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// aster-init reports OOM kills too, but a report made beside the job is data
// about the run; the verdict comes from the host's reading wherever the host
// can read the cgroup, because the job can write to nothing the host reads.

// V2 says the host runs the unified cgroup hierarchy.
func V2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// MemoryDir is the host directory of the memory cgroup at path (as a
// runtime names it, e.g. "/aster/ID" or "/docker/ID").
func MemoryDir(path string) string {
	if V2() {
		return filepath.Join("/sys/fs/cgroup", path)
	}
	return filepath.Join("/sys/fs/cgroup/memory", path)
}

// OOMKills reads the OOM kill count of the memory cgroup in dir
// (memory.events on v2, memory.oom_control on v1). ok is false when the cgroup
// cannot be read (gone, or not on this host).
func OOMKills(dir string) (kills int64, ok bool) {
	for _, f := range []string{"memory.events", "memory.oom_control"} {
		if v, found := keyedInt(filepath.Join(dir, f), "oom_kill"); found {
			return v, true
		}
	}
	return 0, false
}

// PeakBytes reads the cgroup's peak memory use (0 when unreadable).
func PeakBytes(dir string) int64 {
	for _, f := range []string{"memory.peak", "memory.max_usage_in_bytes"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return v
			}
		}
	}
	return 0
}

func keyedInt(file, key string) (int64, bool) {
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// CPUUsage reads the CPU time used by every process of the cgroup at path
// (as a runtime names it, e.g. "/aster/ID"): cpuacct.usage on v1, cpu.stat's
// usage_usec on v2. ok is false when the cgroup cannot be read.
func CPUUsage(path string) (d time.Duration, ok bool) {
	if V2() {
		v, found := keyedInt(filepath.Join("/sys/fs/cgroup", path, "cpu.stat"), "usage_usec")
		return time.Duration(v) * time.Microsecond, found
	}
	for _, ctl := range []string{"cpuacct", "cpu,cpuacct"} {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctl, path, "cpuacct.usage"))
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return time.Duration(v), true
		}
	}
	return 0, false
}

// PidsLimitHits reads how many times a task could not be created in the pids
// cgroup in dir because of its pids.max (the "max" line of pids.events). ok is
// false when it cannot be read.
func PidsLimitHits(dir string) (n int64, ok bool) {
	return keyedInt(filepath.Join(dir, "pids.events"), "max")
}
