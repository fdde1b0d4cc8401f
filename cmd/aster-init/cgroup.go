package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// The sandbox's own cgroup, as the engine mounts it inside the container:
// cgroup v2 at /sys/fs/cgroup, v1 with the memory controller at
// /sys/fs/cgroup/memory. Unreadable files read as zero.

func readOOMKills() int64 {
	if v, ok := keyedValue("/sys/fs/cgroup/memory.events", "oom_kill"); ok {
		return v
	}
	v, _ := keyedValue("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill")
	return v
}

func readCgroupPeak() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.peak", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return v
			}
		}
	}
	return 0
}

func keyedValue(file, key string) (int64, bool) {
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
