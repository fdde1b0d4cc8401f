package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/compose"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/docker"
	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandboxapi"
)

// The systems a harness run can measure, in table order.
const (
	SysBareCrun   = "bare-crun"
	SysDockerRun  = "docker-run"
	SysDockerCold = "aster-docker-cold"
	SysDockerWarm = "aster-docker-warm"
	SysOCICold    = "aster-oci-cold"
	SysOCIWarm    = "aster-oci-warm"
	// The cold systems again through a client that opens a new connection
	// for every request, as a one-off caller (curl, a script) does.
	SysDockerColdNewConn = "aster-docker-cold-newconn"
	SysOCIColdNewConn    = "aster-oci-cold-newconn"
	// The same three on gVisor: runsc alone on Aster's bundle, and Aster
	// with --runtime gvisor.
	SysBareRunsc  = "bare-runsc"
	SysGVisorCold = "aster-gvisor-cold"
	SysGVisorWarm = "aster-gvisor-warm"
	// The microvm runtime (one QEMU microVM per run). Not in the default
	// set: under TCG a cold start takes seconds.
	SysMicroVMCold = "aster-microvm-cold"
	SysMicroVMWarm = "aster-microvm-warm"
)

// SystemNames lists every system in table order.
var SystemNames = []string{SysBareCrun, SysDockerRun, SysDockerCold, SysDockerColdNewConn, SysDockerWarm, SysOCICold, SysOCIColdNewConn, SysOCIWarm, SysBareRunsc, SysGVisorCold, SysGVisorWarm, SysMicroVMCold, SysMicroVMWarm}

// DefaultSystems is what a run measures unless told otherwise.
var DefaultSystems = []string{SysBareCrun, SysDockerRun, SysDockerCold, SysDockerColdNewConn, SysDockerWarm, SysOCICold, SysOCIColdNewConn, SysOCIWarm, SysBareRunsc, SysGVisorCold, SysGVisorWarm}

// Env is what the systems are built from.
type Env struct {
	Image    string
	Defaults sandbox.Limits
	// Config is what the Managers of the aster-* systems are wired from
	// (compose.NewManager: the limit bounds and the reaper allowance, as every
	// command); their one image is Image.
	Config config.Config
	// Docker is the Docker runtime (aster-docker-*); DockerCLI the docker
	// binary (docker-run).
	Docker    *docker.Runtime
	DockerCLI string
	// OCI is the oci runtime (aster-oci-* and bare-crun, which runs the same
	// bundles with the runtime binary alone).
	OCI *oci.Runtime
	// GVisor is the oci runtime on runsc (aster-gvisor-* and bare-runsc).
	GVisor *oci.Runtime
	// MicroVM is the microvm runtime (aster-microvm-*).
	MicroVM sandbox.Runtime
	// Labels mark what the docker-run baseline creates.
	Labels map[string]string
	Logger *slog.Logger
}

// newSystem builds one system by name.
func newSystem(ctx context.Context, name string, env Env, warm int) (system, error) {
	switch name {
	case SysBareCrun:
		if env.OCI == nil {
			return nil, errors.New("bare-crun needs the oci runtime")
		}
		return newBare(ctx, name, env.OCI, env)
	case SysBareRunsc:
		if env.GVisor == nil {
			return nil, errors.New("bare-runsc needs the gvisor runtime (runsc)")
		}
		return newBare(ctx, name, env.GVisor, env)
	case SysDockerRun:
		if env.DockerCLI == "" {
			return nil, errors.New("docker-run needs the docker CLI")
		}
		return &dockerRun{cli: env.DockerCLI, image: env.Image, labels: env.Labels}, nil
	case SysDockerCold, SysDockerWarm, SysDockerColdNewConn:
		if env.Docker == nil {
			return nil, errors.New(name + " needs the Docker engine")
		}
		return newAPISystem(ctx, name, env.Docker, env, warmIf(name == SysDockerWarm, warm))
	case SysOCICold, SysOCIWarm, SysOCIColdNewConn:
		if env.OCI == nil {
			return nil, errors.New(name + " needs the oci runtime")
		}
		return newAPISystem(ctx, name, env.OCI, env, warmIf(name == SysOCIWarm, warm))
	case SysGVisorCold, SysGVisorWarm:
		if env.GVisor == nil {
			return nil, errors.New(name + " needs the gvisor runtime (runsc)")
		}
		return newAPISystem(ctx, name, env.GVisor, env, warmIf(name == SysGVisorWarm, warm))
	case SysMicroVMCold, SysMicroVMWarm:
		if env.MicroVM == nil {
			return nil, errors.New(name + " needs the microvm runtime")
		}
		return newAPISystem(ctx, name, env.MicroVM, env, warmIf(name == SysMicroVMWarm, warm))
	}
	return nil, fmt.Errorf("unknown system %q (have %s)", name, strings.Join(SystemNames, ", "))
}

func warmIf(b bool, n int) int {
	if b {
		return n
	}
	return 0
}

// bare runs the bundle an Aster oci sandbox would get, with its process
// replaced by the job itself, through the runtime binary alone: the floor
// Aster's oci runtime is compared with. The bundle is written before the
// clock starts.
type bare struct {
	name string
	rt   *oci.Runtime
	dir  string
	opts sandbox.PrepareOptions
}

func newBare(ctx context.Context, name string, rt *oci.Runtime, env Env) (*bare, error) {
	dir, err := os.MkdirTemp("", "aster-bench-bundles-")
	if err != nil {
		return nil, err
	}
	b := &bare{name: name, rt: rt, dir: dir, opts: sandbox.PrepareOptions{
		RunID: "bench-bare", Image: env.Image, Limits: env.Defaults, Deadline: time.Now().Add(time.Hour),
	}}
	// One real sandbox first, so the runtime has learned the compiled seccomp
	// filter that every bundle, this baseline's too, then carries.
	inst, err := rt.Prepare(ctx, sandbox.PrepareOptions{RunID: "bench-" + randHex(), Image: env.Image, Limits: env.Defaults, Deadline: time.Now().Add(time.Minute)})
	if err != nil {
		return nil, fmt.Errorf("%s set-up: %w", name, err)
	}
	_ = inst.Close(ctx)
	return b, nil
}

func (b *bare) Name() string { return b.name }

func (b *bare) Run(ctx context.Context, job Job) sample {
	dir := filepath.Join(b.dir, "b-"+randHex())
	if err := os.Mkdir(dir, 0o700); err != nil {
		return sample{err: err}
	}
	defer os.RemoveAll(dir)
	if err := b.rt.WriteBundle(ctx, b.opts, dir, job.Argv); err != nil {
		return sample{err: err}
	}
	var stderr bytes.Buffer
	t0 := time.Now()
	err := b.rt.RunBundle(ctx, dir, io.Discard, &stderr)
	d := time.Since(t0)
	if err != nil {
		return sample{d: d, err: fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))}
	}
	return sample{d: d}
}

func (b *bare) Close() error { return os.RemoveAll(b.dir) }

// dockerRun is `docker run --rm` of the job with no hardening flags beyond
// --network none: what a user would otherwise type.
type dockerRun struct {
	cli    string
	image  string
	labels map[string]string
}

func (d *dockerRun) Name() string { return SysDockerRun }

func (d *dockerRun) Run(ctx context.Context, job Job) sample {
	args := []string{"run", "--rm", "--network", "none"}
	for k, v := range d.labels {
		args = append(args, "--label", k+"="+v)
	}
	args = append(args, d.image)
	args = append(args, job.Argv...)
	cmd := exec.CommandContext(ctx, d.cli, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &out
	t0 := time.Now()
	err := cmd.Run()
	s := sample{d: time.Since(t0)}
	if err != nil {
		s.err = fmt.Errorf("docker run: %v: %s", err, strings.TrimSpace(out.String()))
	}
	return s
}

func (d *dockerRun) Close() error { return nil }

// apiSystem is Aster: a Manager and the HTTP API on a loopback port, driven by
// a real HTTP client. Sandboxes are destroyed in the background after the
// result, as `aster sandbox serve` does.
type apiSystem struct {
	// phases collects every phase the server's metrics observe, at full precision.
	phases phaseTap
	name   string
	mgr    *sandbox.Manager
	url    string
	client *http.Client
	warm   int
	stop   context.CancelFunc
	served chan error
}

// apiMaxConcurrent leaves room for a full pool, a full closed loop and the
// sandboxes still being destroyed behind it.
const apiMaxConcurrent = 96

func newAPISystem(ctx context.Context, name string, rt sandbox.Runtime, env Env, warm int) (*apiSystem, error) {
	metrics := sandboxapi.NewMetrics()
	mgr, err := compose.NewManager(env.Config, rt, sandbox.ManagerOptions{
		Images:        []string{env.Image},
		Defaults:      env.Defaults,
		MaxConcurrent: apiMaxConcurrent,
		QueueSize:     4 * apiMaxConcurrent,
		QueueTimeout:  10 * time.Minute,
		Pool:          sandbox.PoolOptions{Warm: warm, BackgroundClose: true},
		Observer:      metrics,
		Logger:        env.Logger,
	})
	if err != nil {
		return nil, err
	}
	srv, err := sandboxapi.New(sandboxapi.Options{Manager: mgr, Metrics: metrics, Logger: env.Logger})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &apiSystem{
		name: name, mgr: mgr, url: "http://" + ln.Addr().String() + api.RouteExecute, warm: warm, stop: stop,
		served: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0, IdleConnTimeout: time.Minute,
			DisableKeepAlives: strings.HasSuffix(name, "-newconn")}},
	}
	metrics.Tap(s.phases.observe)
	go func() { s.served <- srv.Serve(sctx, ln) }()
	if warm > 0 {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if err := mgr.WaitWarm(wctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: filling the pool: %w", name, err)
		}
	}
	return s, nil
}

func (s *apiSystem) Name() string { return s.name }

func (s *apiSystem) Pooled() bool { return s.warm > 0 }

func (s *apiSystem) WaitWarm(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return s.mgr.WaitWarm(ctx)
}

// quiesce waits until nothing is being destroyed in the background, so one
// cell's teardown does not land in the next cell's numbers.
func (s *apiSystem) quiesce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		pooled := 0
		for _, p := range s.mgr.PoolStats() {
			pooled += p.Ready + p.Preparing
		}
		st := s.mgr.Stats()
		if st.Running <= pooled && st.Queued == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
}

func (s *apiSystem) tap() *phaseTap { return &s.phases }

func (s *apiSystem) Run(ctx context.Context, job Job) sample {
	body, _ := json.Marshal(api.ExecuteRequest{Argv: job.Argv})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return sample{err: err}
	}
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	t0 := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return sample{d: time.Since(t0), err: err}
	}
	defer resp.Body.Close()
	var res sandbox.WireResult
	derr := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&res)
	d := time.Since(t0)
	switch {
	case resp.StatusCode != http.StatusOK:
		return sample{d: d, err: fmt.Errorf("HTTP %d: %s %s", resp.StatusCode, res.Status, res.Error)}
	case derr != nil:
		return sample{d: d, err: fmt.Errorf("decode result: %w", derr)}
	case res.Status != sandbox.StatusOK:
		return sample{d: d, err: fmt.Errorf("status %s: %s %s", res.Status, res.Error, strings.TrimSpace(res.Stderr))}
	}
	_, warm := res.TimingsMS["warm"]
	return sample{d: d, warm: warm, timings: res.TimingsMS}
}

func (s *apiSystem) Close() error {
	s.stop()
	err := <-s.served
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if cerr := s.mgr.Close(ctx); err == nil {
		err = cerr
	}
	s.client.CloseIdleConnections()
	if errors.Is(err, context.Canceled) || errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// phaseTap keeps the durations of each phase the server observed since its last take.
type phaseTap struct {
	mu sync.Mutex
	by map[string][]time.Duration
}

func (p *phaseTap) observe(_, phase string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string][]time.Duration{}
	}
	p.by[phase] = append(p.by[phase], d)
}

// count is how many observations of phase were made since the last take.
func (p *phaseTap) count(phase string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.by[phase])
}

// take returns what was observed and starts again.
func (p *phaseTap) take() map[string][]time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	by := p.by
	p.by = nil
	return by
}

func randHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
