package docker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/hardening"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// containerConfig builds the container for one sandbox. Nothing here comes from
// the request except the image (already checked against the allowlist), the
// sizes in limits (already validated) and the run id; every hardening setting
// is fixed.
func (r *Runtime) containerConfig(opts sandbox.PrepareOptions, id runtimekit.Identity) (*container.Config, *container.HostConfig) {
	l := opts.Limits
	cfg := &container.Config{
		Image: opts.Image,
		// Root only for aster-init's first instant: Docker gives a non-root
		// user no effective capability, and init needs CAP_SETUID to start
		// the job under a uid other than its own. It becomes id.Init before
		// it reads anything (see cmd/aster-init/identity.go).
		User:         InitStartUser,
		Hostname:     "sandbox",
		Entrypoint:   []string{InitMountPath},
		Cmd:          []string{id.Flag(), "-linger=" + initLinger.String()},
		WorkingDir:   "/work",
		Env:          []string{}, // init gives the job only what the caller passed
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
		Tty:          false,
		Labels: map[string]string{
			LabelManaged:  "true",
			LabelRun:      opts.RunID,
			LabelDeadline: strconv.FormatInt(opts.Deadline.Unix(), 10),
		},
		NetworkDisabled: true,
		StopTimeout:     ptr(1),
	}
	for k, v := range r.opts.Labels {
		if _, reserved := cfg.Labels[k]; !reserved {
			cfg.Labels[k] = v
		}
	}
	memory := l.MemoryBytes
	// exec: the engine adds noexec to tmpfs mounts by default, and jobs run
	// scripts from /work and build binaries in /tmp. nr_inodes caps the number
	// of files, which a size cap alone does not.
	tmpfsOpts := func(size int64) string {
		return fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,nr_inodes=%d,uid=%d,gid=%d,mode=0755", size, sandbox.TmpfsInodes(size), id.Job, id.Job)
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		AutoRemove:     true,
		Privileged:     false,
		CapDrop:        []string{"ALL"},
		CapAdd:         InitCapabilities,
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + r.seccomp},
		MaskedPaths:    hardening.MaskedPaths(), // replaces the engine's defaults, so it repeats them
		ReadonlyPaths:  hardening.ReadonlyPaths(),
		ReadonlyRootfs: true,
		IpcMode:        "private",
		PidMode:        "",
		UTSMode:        "",
		CgroupnsMode:   "private",
		LogConfig:      container.LogConfig{Type: "none"},
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Init:           ptr(false),
		ShmSize:        16 << 20,
		Tmpfs: map[string]string{
			"/work": tmpfsOpts(l.WorkdirBytes),
			"/tmp":  tmpfsOpts(l.TmpBytes),
		},
		Mounts: []mount.Mount{{
			Type:        mount.TypeBind,
			Source:      r.initAbs,
			Target:      InitMountPath,
			ReadOnly:    true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		}},
		Resources: container.Resources{
			Memory:         memory,
			MemorySwap:     memory, // swap equal to memory: no swap at all
			NanoCPUs:       l.MilliCPUs * 1_000_000,
			PidsLimit:      ptr(l.Pids),
			OomKillDisable: ptr(false),
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: 1024, Hard: 1024},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
		Runtime: r.opts.EngineRuntime,
	}
	if IsGVisorRuntime(r.opts.EngineRuntime) {
		// The platform is in the engine's runtimeArgs, out of sight: the
		// bound assumes the costliest (ptrace).
		nproc, hostPids := runtimekit.GVisorTaskLimits(l.Pids, "")
		host.Resources.PidsLimit = ptr(hostPids)
		host.Resources.Ulimits = append(host.Resources.Ulimits, &container.Ulimit{Name: "nproc", Soft: nproc, Hard: nproc})
	}
	return cfg, host
}

func ptr[T any](v T) *T { return &v }

// IsGVisorRuntime says whether an engine runtime name is gVisor's: the
// name it is registered under in the engine's daemon.json starts with
// "runsc" (docs/sandbox.md, "gVisor under Docker").
func IsGVisorRuntime(name string) bool { return strings.HasPrefix(name, "runsc") }
