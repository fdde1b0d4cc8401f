package docker_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/hardening"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandbox/securitytest"
)

// TestSecurity runs SECURITY.md sections B–F against the Docker runtime.
func TestSecurity(t *testing.T) {
	rt := sandboxtest.Docker(t)
	api, err := client.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	securitytest.Run(t, securitytest.Target{Runtime: rt, Image: sandboxtest.Image(), Footprint: footprint(api)})
}

// footprint measures a live container's host storage: the engine's size of
// its writable layer and, where this process can read the layer's directory
// (root on the engine's host, as in CI), the files in it, which a size alone
// misses when they are empty.
func footprint(api *client.Client) func(ctx context.Context, id string) (securitytest.Footprint, error) {
	return func(ctx context.Context, id string) (securitytest.Footprint, error) {
		got, err := api.ContainerInspect(ctx, id, client.ContainerInspectOptions{Size: true})
		if err != nil {
			return securitytest.Footprint{}, err
		}
		c := got.Container
		if c.SizeRw == nil {
			return securitytest.Footprint{}, fmt.Errorf("engine gave no size for container %s", id)
		}
		fp := securitytest.Footprint{Bytes: *c.SizeRw, Files: -1}
		if c.GraphDriver != nil {
			if upper := c.GraphDriver.Data["UpperDir"]; upper != "" {
				if _, err := os.Stat(upper); err == nil {
					layer, err := securitytest.DirFootprint(upper)
					if err != nil {
						return fp, err
					}
					fp.Files, fp.Bytes = layer.Files, max(fp.Bytes, layer.Bytes)
				}
			}
		}
		return fp, nil
	}
}

// TestLiveSandboxSettings is SECURITY.md section A: the settings of a live
// sandbox, inspected from the host while it runs.
func TestLiveSandboxSettings(t *testing.T) {
	rt := sandboxtest.Docker(t)
	ctx := t.Context()
	limits := sandbox.DefaultLimits()
	inst, err := rt.Prepare(ctx, sandbox.PrepareOptions{
		RunID:    sandbox.NewRunID(),
		Image:    sandboxtest.Image(),
		Limits:   limits,
		Deadline: time.Now().Add(time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())

	api, err := client.New()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	got, err := api.ContainerInspect(ctx, inst.ID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Container
	hc := c.HostConfig
	if !c.State.Running {
		t.Fatalf("sandbox not running while inspected: %+v", c.State)
	}

	// A1: not privileged; no added capabilities; all dropped; no-new-privileges;
	// seccomp and AppArmor not unconfined.
	if hc.Privileged {
		t.Error("A1: privileged")
	}
	// The one exception: aster-init's CAP_SETUID, CAP_SETGID and CAP_SETPCAP,
	// to start the job under its own uid; live, init already holds an empty
	// bounding set, and it drops the three once the job is forked (the job's
	// side is checked below and in E1).
	if added := slices.Sorted(slices.Values(hc.CapAdd)); !slices.Equal(added, slices.Sorted(slices.Values(docker.InitCapabilities))) {
		t.Errorf("A1: capabilities added: %v, want only %v", hc.CapAdd, docker.InitCapabilities)
	}
	initStatus := procStatus(t, c.State.Pid)
	if initStatus["CapBnd"] != "0000000000000000" || initStatus["CapInh"] != "0000000000000000" || initStatus["CapAmb"] != "0000000000000000" {
		t.Errorf("A1: aster-init's capability sets %v, want empty bounding, inheritable and ambient sets", initStatus)
	}
	if eff, err := strconv.ParseUint(initStatus["CapEff"], 16, 64); err != nil || eff&^0x1c0 != 0 {
		t.Errorf("A1: aster-init holds CapEff %s, want at most SETUID|SETGID|SETPCAP", initStatus["CapEff"])
	}
	if len(hc.CapDrop) != 1 || !strings.EqualFold(hc.CapDrop[0], "ALL") {
		t.Errorf("A1: CapDrop %v, want [ALL]", hc.CapDrop)
	}
	nnp := false
	for _, o := range hc.SecurityOpt {
		if strings.HasPrefix(o, "no-new-privileges") && !strings.HasSuffix(o, "false") {
			nnp = true
		}
		if strings.Contains(o, "unconfined") {
			t.Errorf("A1: security option %q", o)
		}
	}
	if !nnp {
		t.Errorf("A1: no-new-privileges missing from %v", hc.SecurityOpt)
	}
	// M1, M4: the engine holds the Aster profile and path lists, not its own.
	profile, err := hardening.SeccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hc.SecurityOpt, "seccomp="+string(profile)) {
		t.Error("M1: the container does not run the Aster seccomp profile")
	}
	if !slices.Equal(hc.MaskedPaths, hardening.MaskedPaths()) || !slices.Equal(hc.ReadonlyPaths, hardening.ReadonlyPaths()) {
		t.Errorf("M4: masked %v read-only %v, want the Aster lists", hc.MaskedPaths, hc.ReadonlyPaths)
	}
	if c.AppArmorProfile == "unconfined" {
		t.Error("A1: AppArmor unconfined")
	}

	// A2: read-only root; every tmpfs has a size; network none.
	if !hc.ReadonlyRootfs {
		t.Error("A2: root filesystem writable")
	}
	if len(hc.Tmpfs) == 0 {
		t.Error("A2: no tmpfs")
	}
	for dst, opts := range hc.Tmpfs {
		if !strings.Contains(opts, "size=") || !strings.Contains(opts, "nr_inodes=") {
			t.Errorf("A2: tmpfs %s without size/inode cap: %q", dst, opts)
		}
	}
	if hc.NetworkMode != "none" {
		t.Errorf("A2: network mode %q", hc.NetworkMode)
	}
	for name := range c.NetworkSettings.Networks {
		if name != "none" {
			t.Errorf("A2: attached to network %q", name)
		}
	}

	// A3: memory limit, swap equal to it; CPU quota; pids limit.
	if hc.Memory != limits.MemoryBytes || hc.MemorySwap != hc.Memory {
		t.Errorf("A3: memory %d swap %d, want %d both", hc.Memory, hc.MemorySwap, limits.MemoryBytes)
	}
	if hc.NanoCPUs <= 0 && hc.CPUQuota <= 0 {
		t.Error("A3: no CPU quota")
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != limits.Pids {
		t.Errorf("A3: pids limit %v, want %d", hc.PidsLimit, limits.Pids)
	}
	ulimits := map[string]int64{}
	for _, u := range hc.Ulimits {
		ulimits[u.Name] = u.Hard
	}
	if ulimits["nofile"] <= 0 || ulimits["core"] != 0 {
		t.Errorf("A3: ulimits %v, want nofile and core=0", ulimits)
	} else if _, ok := ulimits["core"]; !ok {
		t.Error("A3: no core ulimit")
	}

	// A4: not root; no host pid/ipc/uts/userns/cgroup namespace sharing.
	// Docker starts aster-init as root (it gives a non-root user no effective
	// capability); init is the sandbox's own unprivileged uid before it reads
	// anything, which is what the live process shows.
	if c.Config.User != docker.InitStartUser {
		t.Errorf("A4: user %q, want %q", c.Config.User, docker.InitStartUser)
	}
	for _, id := range append(strings.Fields(initStatus["Uid"]), strings.Fields(initStatus["Gid"])...) {
		if n, err := strconv.Atoi(id); err != nil || n < runtimekit.DefaultIdentityBase {
			t.Errorf("A4: aster-init runs as uid/gid %s / %s, want the sandbox's own ids", initStatus["Uid"], initStatus["Gid"])
			break
		}
	}
	if string(hc.PidMode) == "host" || string(hc.IpcMode) == "host" || string(hc.UTSMode) == "host" || string(hc.UsernsMode) == "host" || string(hc.CgroupnsMode) == "host" {
		t.Errorf("A4: host namespace shared: pid=%q ipc=%q uts=%q userns=%q cgroupns=%q", hc.PidMode, hc.IpcMode, hc.UTSMode, hc.UsernsMode, hc.CgroupnsMode)
	}

	// A5: no engine socket, /, /proc, /sys, /dev, /etc mounts; no devices; no
	// shared propagation. The only mount is aster-init, read-only.
	if len(hc.Devices) != 0 || len(hc.DeviceRequests) != 0 || len(hc.Binds) != 0 {
		t.Errorf("A5: devices %v, device requests %v, binds %v", hc.Devices, hc.DeviceRequests, hc.Binds)
	}
	for _, m := range c.Mounts {
		switch {
		case m.Destination == docker.InitMountPath:
			if m.RW {
				t.Error("A5: aster-init mounted read-write")
			}
			if strings.Contains(string(m.Propagation), "shared") || strings.Contains(string(m.Propagation), "slave") {
				t.Errorf("A5: propagation %q", m.Propagation)
			}
		case string(m.Type) == "tmpfs":
		default:
			t.Errorf("A5: unexpected mount %s → %s (%s)", m.Source, m.Destination, m.Type)
		}
		for _, bad := range []string{"docker.sock", "containerd.sock"} {
			if strings.Contains(m.Source, bad) {
				t.Errorf("A5: engine socket mounted: %s", m.Source)
			}
		}
		if m.Source == "/" || m.Source == "/proc" || m.Source == "/sys" || m.Source == "/dev" || m.Source == "/etc" {
			t.Errorf("A5: host %s mounted", m.Source)
		}
	}

	// A6: labels present; logging driver none.
	for _, l := range []string{docker.LabelManaged, docker.LabelRun, docker.LabelDeadline} {
		if c.Config.Labels[l] == "" {
			t.Errorf("A6: label %s missing", l)
		}
	}
	if hc.LogConfig.Type != "none" {
		t.Errorf("A6: logging driver %q", hc.LogConfig.Type)
	}

	// The inspected sandbox still runs its one job normally.
	res, err := inst.Run(ctx, sandbox.Job{Argv: []string{"echo", "ok"}, Limits: limits})
	if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout.Data) != "ok\n" {
		t.Fatalf("job after inspection: %v %+v", err, res.Wire())
	}
}

// TestNoRequestCanRelaxHardening feeds the runtime the most permissive limits
// the API accepts and checks the container is hardened all the same.
func TestNoRequestCanRelaxHardening(t *testing.T) {
	rt := sandboxtest.Docker(t)
	securitytest.NoRequestCanRelaxHardening(t, rt, sandboxtest.Image(), "r-relax")
}

// procStatus reads the host's /proc/PID/status as key → value.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("read the sandbox init's status: %v", err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
