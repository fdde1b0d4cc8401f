package main

import "github.com/asterhq/aster/internal/cgroupstat"

// The sandbox's own cgroup, as the engine mounts it inside the container:
// cgroup v2 at /sys/fs/cgroup, v1 with the memory controller at
// /sys/fs/cgroup/memory. Unreadable files read as zero. The host's reading
// of the same cgroup, where it can make one, overrides this report.

func readOOMKills() int64 {
	for _, dir := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/memory"} {
		if n, ok := cgroupstat.OOMKills(dir); ok {
			return n
		}
	}
	return 0
}

func readCgroupPeak() int64 {
	for _, dir := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/memory"} {
		if n := cgroupstat.PeakBytes(dir); n > 0 {
			return n
		}
	}
	return 0
}
