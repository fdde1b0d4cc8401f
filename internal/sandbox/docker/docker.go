// Package docker runs Aster sandboxes on a Docker-compatible engine (Docker, or
// Podman's compatible socket) over the moby client. Every container gets the
// full hardening set regardless of what the request asked for, and is
// force-removed on every exit path.
package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/asterhq/aster/internal/cgroupstat"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/hardening"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// Labels every Aster container carries. The reaper selects on LabelManaged and
// removes containers whose LabelDeadline (unix seconds) has passed.
const (
	LabelManaged  = "aster.managed"
	LabelRun      = "aster.run"
	LabelDeadline = "aster.deadline"
)

// InitMountPath is where aster-init is mounted, read-only, in every sandbox.
const InitMountPath = "/.aster/init"

// InitStartUser is the user the container starts aster-init as. Init switches
// to its sandbox's own unprivileged uid before it reads anything; the job runs
// under a second uid of that sandbox (runtimekit.Identity), whatever the image says.
const InitStartUser = "0:0"

// InitCapabilities are the only capabilities a sandbox starts with: aster-init's,
// to start the job under its own uid. Init empties the bounding set before the
// job starts and drops all three right after; the job never holds any.
var InitCapabilities = []string{"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"}

// initLinger is how long aster-init keeps a finished sandbox after its result,
// waiting for the host to close the stream: the host reads the sandbox's
// cgroup (its OOM verdict) meanwhile, and the cgroup goes with the container.
const initLinger = 10 * time.Second

// engine is the part of the Docker API this package uses.
type engine interface {
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerAttach(ctx context.Context, containerID string, options client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ExecCreate(ctx context.Context, containerID string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	ContainerWait(ctx context.Context, containerID string, options client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerStart(ctx context.Context, containerID string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerRemove(ctx context.Context, containerID string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerPause(ctx context.Context, containerID string, options client.ContainerPauseOptions) (client.ContainerPauseResult, error)
	ContainerUnpause(ctx context.Context, containerID string, options client.ContainerUnpauseOptions) (client.ContainerUnpauseResult, error)
	ContainerInspect(ctx context.Context, containerID string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ImageInspect(ctx context.Context, imageID string, inspectOpts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
}

var _ engine = (*client.Client)(nil)

// Options configure the runtime.
type Options struct {
	// Host is the engine address (unix:///var/run/docker.sock when empty, or
	// DOCKER_HOST when set).
	Host string
	// InitPath is the host path of the static aster-init binary.
	InitPath string
	// EngineRuntime selects an engine runtime such as "runsc" (gVisor) or
	// "kata-runtime"; empty uses the engine's default.
	EngineRuntime string
	// Labels are added to every container (tests use them to find their own);
	// they cannot override the aster.* labels.
	Labels map[string]string
	// Identities hands out each sandbox's own uids; nil uses a pool over
	// the default range.
	Identities *runtimekit.IdentityPool
	Logger     *slog.Logger
	// SessionEngineExecs makes every exec of a session an engine exec of a
	// further aster-init, as before the holder served execs over channels of
	// its attach stream (benchmarks compare the two).
	SessionEngineExecs bool
}

// Runtime is the Docker implementation of sandbox.Runtime.
type Runtime struct {
	api     engine
	closer  func() error
	opts    Options
	log     *slog.Logger
	initAbs string
	ids     *runtimekit.IdentityPool

	cgroupOnce sync.Once
	cgroupFmt  string // host memory cgroup directory of a container, %s = its id; "" unknown
	seccomp    string // the Aster seccomp profile as JSON, the engine's inline form
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New connects to the engine. It does not contact it yet: Check does.
func New(opts Options) (*Runtime, error) {
	if opts.InitPath == "" {
		return nil, errors.New("docker runtime: no aster-init path")
	}
	abs, err := runtimekit.CheckInitBinary(opts.InitPath)
	if err != nil {
		return nil, err
	}
	seccompJSON := hardening.SeccompJSON
	if IsGVisorRuntime(opts.EngineRuntime) {
		seccompJSON = hardening.GVisorSeccompJSON // runsc answers every errno rule with EPERM
	}
	profile, err := seccompJSON()
	if err != nil {
		return nil, err
	}
	var copts []client.Opt
	switch {
	case opts.Host != "":
		copts = append(copts, client.WithHost(opts.Host))
	case os.Getenv("DOCKER_HOST") != "":
		copts = append(copts, client.WithHostFromEnv())
	}
	c, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ids := opts.Identities
	if ids == nil {
		if ids, err = runtimekit.NewIdentityPool(runtimekit.IdentityPoolOptions{}); err != nil {
			c.Close()
			return nil, err
		}
	}
	return &Runtime{api: c, closer: c.Close, opts: opts, log: log, initAbs: abs, ids: ids, seccomp: string(profile)}, nil
}

// cgroupDir is the host directory of a container's memory cgroup, when the
// engine runs on this host with a cgroup layout we know; "" otherwise (a
// remote engine, a custom cgroup parent), and then the OOM verdict rests on
// how init ended and on init's own report.
func (r *Runtime) cgroupDir(ctx context.Context, id string) string {
	r.cgroupOnce.Do(func() {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		info, err := r.api.Info(ictx, client.InfoOptions{})
		if err != nil {
			return
		}
		switch info.Info.CgroupDriver {
		case "cgroupfs":
			r.cgroupFmt = cgroupstat.MemoryDir("/docker/%s")
		case "systemd":
			r.cgroupFmt = cgroupstat.MemoryDir("/system.slice/docker-%s.scope")
		}
	})
	if r.cgroupFmt == "" {
		return ""
	}
	dir := fmt.Sprintf(r.cgroupFmt, id)
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

// Close releases the client.
func (r *Runtime) Close() error {
	if r.closer != nil {
		return r.closer()
	}
	return nil
}

// Name implements sandbox.Runtime.
func (r *Runtime) Name() string { return "docker" }

// Check implements sandbox.Runtime.
func (r *Runtime) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := r.api.Ping(ctx, client.PingOptions{}); err != nil {
		if strings.Contains(err.Error(), "permission denied") {
			return fmt.Errorf("%w: docker engine: %v (the Docker socket is for root and the docker group: run aster as root, or add your user to the group with `sudo usermod -aG docker $USER` and log in again)", sandbox.ErrUnavailable, err)
		}
		return fmt.Errorf("%w: docker engine: %v", sandbox.ErrUnavailable, err)
	}
	return nil
}

// ImageInfo implements sandbox.Runtime.
func (r *Runtime) ImageInfo(ctx context.Context, image string) (sandbox.ImageInfo, error) {
	res, err := r.api.ImageInspect(ctx, image)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return sandbox.ImageInfo{}, fmt.Errorf("%w: %s is not present on the engine; pull or build it there first (`make image` builds only the default %s)", sandbox.ErrUnknownImage, image, "aster-sandbox:latest")
		}
		return sandbox.ImageInfo{}, classify("inspect image", err)
	}
	return sandbox.ImageInfo{Name: image, Digest: res.ID}, nil
}

// List implements sandbox.Runtime.
func (r *Runtime) List(ctx context.Context) ([]sandbox.Managed, error) {
	res, err := r.api.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelManaged+"=true"),
	})
	if err != nil {
		return nil, classify("list containers", err)
	}
	out := make([]sandbox.Managed, 0, len(res.Items))
	for _, c := range res.Items {
		m := sandbox.Managed{ID: c.ID, RunID: c.Labels[LabelRun], State: string(c.State), Created: time.Unix(c.Created, 0)}
		if s, ok := c.Labels[LabelDeadline]; ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				m.Deadline = time.Unix(n, 0)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// Remove implements sandbox.Runtime: force-remove, "already gone" is success.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	_, err := r.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) || isRemovalInProgress(err) {
		return nil
	}
	return classify("remove container", err)
}

func isRemovalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// classify maps engine errors onto sandbox error classes.
func classify(op string, err error) error {
	switch {
	case client.IsErrConnectionFailed(err), errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w: %v", op, sandbox.ErrUnavailable, err)
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%s: %w", op, err)
	case cerrdefs.IsUnavailable(err), cerrdefs.IsInternal(err) && strings.Contains(err.Error(), "connect"):
		return fmt.Errorf("%s: %w: %v", op, sandbox.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
