package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/cgroupstat"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/textclip"
)

// SleepersConfig is the concurrency test: N sandboxes held at once, each
// sleeping, through the HTTP API of a real `aster sandbox serve` process
// whose own memory is measured.
type SleepersConfig struct {
	// Runtime is "docker", "oci", "gvisor" or "microvm".
	Runtime string
	N       int
	// Hold is how long all N sandboxes must be alive together. Every sleeper
	// sleeps until launch + StartWindow + Hold, so that however fast the
	// runtime starts them, the last one to start still overlaps every other
	// for Hold, as long as all started within StartWindow.
	Hold        time.Duration
	StartWindow time.Duration
	// Pids, when set, is each sleeper's pids limit. The host task budget charges a
	// sandbox by its pids limit (docs/sandbox.md), so the default admits ~900 crun
	// sandboxes or 16 gVisor ones on ptrace here; a sleeper needs a handful.
	Pids int
	// Aster is the aster binary to serve with; ServeArgs are added to its
	// `sandbox serve` command line (global flags such as --init-path).
	Aster     string
	ServeArgs []string
	// Sessions holds N idle sessions (POST /v1/sessions, deleted at the end)
	// instead of N sleeping one-shot runs: the density of sessions.
	Sessions bool
	// RSSLimitBytes, when set, fails the run if the orchestrator's RSS goes over it.
	RSSLimitBytes int64
	Progress      io.Writer
}

// SleepersReport is the outcome of the concurrency test.
type SleepersReport struct {
	Runtime     string    `json:"runtime"`
	Sessions    bool      `json:"sessions,omitempty"` // idle sessions rather than sleeping runs
	Pids        int       `json:"pids,omitempty"`
	Sandboxes   int       `json:"sandboxes"`
	HoldMS      int64     `json:"hold_ms"`
	Started     time.Time `json:"started"`
	Cores       int       `json:"cores"`
	Errors      int       `json:"errors"`
	FirstError  string    `json:"first_error,omitempty"`
	PeakUp      int       `json:"peak_up"`     // sandboxes whose job was running at once
	AllUpMS     int64     `json:"all_up_ms"`   // launch until the last job started (-1: never)
	HeldAllMS   int64     `json:"held_all_ms"` // how long all N ran together
	StartRate   float64   `json:"start_rate"`  // sandboxes started per second until all were up
	WallMS      int64     `json:"wall_ms"`     // launch until the last result
	OrchRSSPeak int64     `json:"orchestrator_rss_peak_bytes"`
	OrchRSSHeld int64     `json:"orchestrator_rss_while_held_bytes"`
	OrchHWM     int64     `json:"orchestrator_vm_hwm_bytes"`
	// SandboxRSS is the memory of everything else the sandboxes cost, at the
	// moment all were up: for oci the runtime processes and the sandboxes'
	// own processes (children of the orchestrator); for docker the engine's
	// processes (dockerd, containerd, shims) and the containers'. RSS counts
	// shared pages in every process; SandboxPSS shares them out, so it is what
	// the sandboxes cost together. PerSandbox* divide them by the sandboxes.
	// MemoryAt is how many sandboxes were alive when the sandbox-side memory
	// was read: all of them, or the most reached in a tenth of N steps.
	MemoryAt      int   `json:"memory_measured_with"`
	SandboxRSS    int64 `json:"sandbox_side_rss_bytes"`
	SandboxPSS    int64 `json:"sandbox_side_pss_bytes"`
	SandboxProcs  int   `json:"sandbox_side_processes"`
	PerSandboxRSS int64 `json:"per_sandbox_rss_bytes"`
	PerSandboxPSS int64 `json:"per_sandbox_pss_bytes"`
	// SandboxCgroups is what the kernel charges the memory cgroups of those
	// processes (not the orchestrator's): with what no process maps (tmpfs,
	// page tables, kernel stacks). CgroupsN is how many there were.
	SandboxCgroups   int64 `json:"sandbox_cgroups_bytes"`
	CgroupsN         int   `json:"sandbox_cgroups"`
	PerSandboxCgroup int64 `json:"per_sandbox_cgroup_bytes"`
	// Load is the load average before and after, for reading the timings.
	LoadBefore []float64 `json:"loadavg_before"`
	LoadAfter  []float64 `json:"loadavg_after"`
	Note       string    `json:"note,omitempty"`
	Pass       bool      `json:"pass"`
}

// Sleepers runs the concurrency test.
func Sleepers(ctx context.Context, cfg SleepersConfig) (*SleepersReport, error) {
	if cfg.N <= 0 {
		cfg.N = 500
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 30 * time.Second
	}
	if cfg.StartWindow <= 0 {
		cfg.StartWindow = 60 * time.Second
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"--runtime", cfg.Runtime, "--log-level", "warn"}, cfg.ServeArgs...)
	args = append(args, "sandbox", "serve", "--addr", "127.0.0.1:"+strconv.Itoa(port),
		"--max-concurrent", strconv.Itoa(cfg.N), "--queue", strconv.Itoa(cfg.N), "--queue-timeout", "10m",
		"--write-timeout", "10m")
	if cfg.Sessions {
		// Each session holds a sandbox slot; one caller (loopback, no token) holds all.
		args = append(args, "--max-sessions", strconv.Itoa(cfg.N), "--max-sessions-per-token", strconv.Itoa(cfg.N))
	}
	srvCtx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSrv()
	cmd := exec.CommandContext(srvCtx, cfg.Aster, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Minute
	var srvLog bytes.Buffer
	cmd.Stdout, cmd.Stderr = &srvLog, &srvLog
	fmt.Fprintf(progress, "starting %s %s\n", cfg.Aster, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the orchestrator: %w", err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- cmd.Wait() }()
	stop := func() {
		stopSrv()
		<-srvDone
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.N + 16, IdleConnTimeout: time.Minute}}
	if err := waitReady(ctx, client, base+api.RouteReady, srvDone); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, textclip.Tail(srvLog.String(), 2000, ""))
	}
	pid := cmd.Process.Pid

	rep := &SleepersReport{Runtime: cfg.Runtime, Sessions: cfg.Sessions, Pids: cfg.Pids, Sandboxes: cfg.N, HoldMS: cfg.Hold.Milliseconds(), Started: time.Now(), AllUpMS: -1, Cores: numCPU(),
		LoadBefore: loadavg()}
	launch := time.Now()
	end := launch.Add(cfg.StartWindow + cfg.Hold)
	script := fmt.Sprintf("echo up; t=$((%d - $(date +%%s))); [ \"$t\" -gt 0 ] && exec sleep \"$t\"; true", end.Unix())
	timeout := cfg.StartWindow + cfg.Hold + time.Minute
	limits := map[string]any{"timeout": timeout.Round(time.Second).String()}
	if cfg.Pids > 0 {
		limits["pids"] = strconv.Itoa(cfg.Pids)
	}
	body, _ := json.Marshal(map[string]any{"argv": []string{"sh", "-c", script}, "limits": limits})

	var mu sync.Mutex
	up, done := 0, 0
	var allUp time.Time
	var rssHeld int64
	var sideHeld sideMemory
	sampledAt := 0 // sandboxes alive when sideHeld was read
	markUp := func() {
		mu.Lock()
		defer mu.Unlock()
		up++
		if live := up - done; live > rep.PeakUp {
			rep.PeakUp = live
		}
		live := up - done
		if up == cfg.N && done == 0 {
			allUp = time.Now()
		}
		// The memory figures: when all are up, and before that at each tenth more
		// alive at once, so a run that never has all N up still says what those
		// that were cost.
		if live == cfg.N || live >= sampledAt+max(cfg.N/10, 1) {
			sampledAt = live
			rssHeld = rssOf(pid)
			sideHeld = sandboxSide(cfg.Runtime, pid)
		}
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		rep.Errors++
		if rep.FirstError == "" {
			rep.FirstError = err.Error()
		}
	}

	// Memory sampler.
	sampleDone := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if r := rssOf(pid); r > 0 {
				mu.Lock()
				rep.OrchRSSPeak = max(rep.OrchRSSPeak, r)
				mu.Unlock()
			}
			select {
			case <-sampleDone:
				return
			case <-t.C:
			}
		}
	}()
	ticker := time.NewTicker(5 * time.Second)
	defer ticker.Stop()
	go func() {
		for {
			select {
			case <-sampleDone:
				return
			case <-ticker.C:
				mu.Lock()
				fmt.Fprintf(progress, "  %5.1fs up=%d done=%d errors=%d rss=%dMB\n", time.Since(launch).Seconds(), up, done, rep.Errors, rep.OrchRSSPeak>>20)
				mu.Unlock()
			}
		}
	}()

	var wg sync.WaitGroup
	for range cfg.N {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if cfg.Sessions {
				err = idleSession(ctx, client, base, cfg.Pids, end, markUp)
			} else {
				err = sleeper(ctx, client, base+api.RouteExecuteStream, body, markUp)
			}
			mu.Lock()
			done++
			mu.Unlock()
			if err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	close(sampleDone)
	rep.WallMS = time.Since(launch).Milliseconds()
	rep.OrchHWM = hwmOf(pid)
	rep.OrchRSSHeld, rep.SandboxRSS, rep.SandboxPSS, rep.SandboxProcs = rssHeld, sideHeld.rss, sideHeld.pss, sideHeld.procs
	rep.MemoryAt = sampledAt
	if sampledAt > 0 {
		rep.PerSandboxRSS, rep.PerSandboxPSS = sideHeld.rss/int64(sampledAt), sideHeld.pss/int64(sampledAt)
	}
	rep.SandboxCgroups, rep.CgroupsN = sideHeld.cgroups, sideHeld.cgroupsN
	if sideHeld.cgroupsN > 0 {
		rep.PerSandboxCgroup = sideHeld.cgroups / int64(sideHeld.cgroupsN)
	}
	rep.LoadAfter = loadavg()
	if !allUp.IsZero() {
		rep.AllUpMS = allUp.Sub(launch).Milliseconds()
		rep.HeldAllMS = end.Sub(allUp).Milliseconds()
		rep.StartRate = round2(float64(cfg.N) / allUp.Sub(launch).Seconds())
	}
	rep.Pass = rep.Errors == 0 && rep.PeakUp == cfg.N && rep.HeldAllMS >= cfg.Hold.Milliseconds() &&
		(cfg.RSSLimitBytes <= 0 || rep.OrchRSSPeak <= cfg.RSSLimitBytes)
	if rep.PeakUp < cfg.N {
		rep.Note = fmt.Sprintf("only %d of %d were up at once: the runtime started them too slowly for a %s start window", rep.PeakUp, cfg.N, cfg.StartWindow)
	}
	return rep, nil
}

// sleeper runs one sleeping job with a streamed answer, calling up when the
// job's first output arrives.
func sleeper(ctx context.Context, client *http.Client, url string, body []byte, up func()) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	req.Header.Set("Accept", api.ContentTypeNDJSON)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	seen := false
	for sc.Scan() {
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		switch ev.Type {
		case api.EventStdout:
			if !seen && bytes.Contains(ev.Data, []byte("up")) {
				seen = true
				up()
			}
		case api.EventError:
			return fmt.Errorf("%s: %s", ev.Error.Code, ev.Error.Message)
		case api.EventResult:
			var res sandbox.WireResult
			if err := json.Unmarshal(ev.Result, &res); err != nil {
				return fmt.Errorf("result: %w", err)
			}
			if res.Status != sandbox.StatusOK {
				return fmt.Errorf("status %s: %s", res.Status, res.Error)
			}
			if !seen {
				return errors.New("the job never said it was up")
			}
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("stream ended without a result")
}

// idleSession creates a session, calls up once it exists, holds it idle
// until end and deletes it.
func idleSession(ctx context.Context, client *http.Client, base string, pids int, end time.Time, up func()) error {
	req := api.SessionRequest{TTL: api.Quantity(strconv.Itoa(int(time.Until(end).Seconds()) + 120))}
	if pids > 0 {
		req.Limits.Pids = api.Quantity(strconv.Itoa(pids))
	}
	body, _ := json.Marshal(req)
	call := func(method, url string, body []byte, want int) ([]byte, error) {
		r, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		if body != nil {
			r.Header.Set("Content-Type", api.ContentTypeJSON)
		}
		resp, err := client.Do(r)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode != want {
			return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, url, resp.StatusCode, bytes.TrimSpace(b))
		}
		return b, nil
	}
	b, err := call(http.MethodPost, base+api.RouteSessions, body, http.StatusCreated)
	if err != nil {
		return err
	}
	var s api.Session
	if err := json.Unmarshal(b, &s); err != nil || s.ID == "" {
		return fmt.Errorf("create answered %.200q", b)
	}
	up()
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(end)):
	}
	_, err = call(http.MethodDelete, base+api.RouteSessions+"/"+s.ID, nil, http.StatusNoContent)
	return err
}

// PrintSleepers writes the report as a short table.
func PrintSleepers(w io.Writer, r *SleepersReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
	rows := [][2]string{
		{"runtime", r.Runtime},
		{"sandboxes", strconv.Itoa(r.Sandboxes) + map[bool]string{true: " idle sessions", false: " sleeping runs"}[r.Sessions]},
		{"errors", strconv.Itoa(r.Errors)},
		{"peak running at once", strconv.Itoa(r.PeakUp)},
		{"all up after", fmt.Sprintf("%.1f s (%.1f starts/s)", float64(r.AllUpMS)/1000, r.StartRate)},
		{"held all together", fmt.Sprintf("%.1f s (--hold %.0f s)", float64(r.HeldAllMS)/1000, float64(r.HoldMS)/1000)},
		{"orchestrator RSS peak", mb(r.OrchRSSPeak) + " (VmHWM " + mb(r.OrchHWM) + ")"},
		{"memory read with", fmt.Sprintf("%d sandboxes alive", r.MemoryAt)},
		{"orchestrator RSS then", mb(r.OrchRSSHeld)},
		{"sandbox-side RSS then", fmt.Sprintf("%s (%d processes)", mb(r.SandboxRSS), r.SandboxProcs)},
		{"sandbox-side PSS then", mb(r.SandboxPSS)},
		{"per sandbox, RSS / PSS", mb(r.PerSandboxRSS) + " / " + mb(r.PerSandboxPSS)},
		{"sandbox memory cgroups", fmt.Sprintf("%s in %d (%s each)", mb(r.SandboxCgroups), r.CgroupsN, mb(r.PerSandboxCgroup))},
		{"load average", fmt.Sprintf("%v → %v", r.LoadBefore, r.LoadAfter)},
		{"wall", fmt.Sprintf("%.1f s", float64(r.WallMS)/1000)},
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	tw.Flush()
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "note: %s\n", r.Note)
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "%s: %d sleepers, %d errors, all alive together for %.0f s: %v\n", verdict, r.Sandboxes, r.Errors, float64(r.HoldMS)/1000, r.PeakUp == r.Sandboxes && r.HeldAllMS >= r.HoldMS)
}

func waitReady(ctx context.Context, client *http.Client, url string, exited <-chan error) error {
	deadline := time.NewTimer(10 * time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the orchestrator exited: %v", err)
		case <-deadline.C:
			return errors.New("the orchestrator did not become ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// statusKB reads a "Key: N kB" line of /proc/<pid>/status, in bytes.
func statusKB(pid int, key string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

func rssOf(pid int) int64 { return statusKB(pid, "VmRSS") }
func hwmOf(pid int) int64 { return statusKB(pid, "VmHWM") }

// sideMemory is what the sandboxes cost outside the orchestrator process.
type sideMemory struct {
	rss, pss int64
	procs    int
	// cgroups is the memory the kernel charges the memory cgroups those processes
	// run in, other than the orchestrator's own: the processes' pages and also what
	// belongs to no process (tmpfs files, page tables, kernel stacks), once each.
	cgroups  int64
	cgroupsN int
}

// sandboxSide sums the memory of what runs the sandboxes outside the orchestrator
// process: for oci, gvisor and microvm its descendants (the runtime processes and
// the sandboxes' own; a microVM's QEMU, whose host cgroup holds the guest's RAM), for docker the engine's processes and the containers'. RSS counts
// a page shared by many processes (the runtime's and aster-init's code) once in each;
// PSS divides it among them, so the PSS sum is what the sandboxes cost together.
func sandboxSide(runtime string, orchestrator int) sideMemory {
	procs := processTable()
	var m sideMemory
	own := memoryCgroup(orchestrator)
	seen := map[string]bool{}
	add := func(pid int) {
		m.rss += procs[pid].rss
		m.pss += pssOf(pid)
		m.procs++
		if cg := memoryCgroup(pid); cg != "" && cg != own && cg != "/" && !seen[cg] {
			seen[cg] = true
			if v, ok := cgroupMemory(cg); ok {
				m.cgroups += v
				m.cgroupsN++
			}
		}
	}
	if runtime == "oci" || runtime == "gvisor" || runtime == "microvm" {
		children := map[int][]int{}
		for pid, p := range procs {
			children[p.ppid] = append(children[p.ppid], pid)
		}
		var walk func(int)
		walk = func(pid int) {
			for _, c := range children[pid] {
				add(c)
				walk(c)
			}
		}
		walk(orchestrator)
		return m
	}
	for pid, p := range procs {
		if strings.HasPrefix(p.comm, "containerd") || p.comm == "dockerd" || p.inDocker {
			add(pid)
		}
	}
	return m
}

// memoryCgroup is the path of pid's memory cgroup (v1 memory controller, or the v2
// unified one), "" when unreadable.
func memoryCgroup(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return ""
	}
	unified := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if slices.Contains(strings.Split(f[1], ","), "memory") {
			return f[2]
		}
		if f[0] == "0" && f[1] == "" {
			unified = f[2]
		}
	}
	return unified
}

// cgroupMemory is the memory charged to the memory cgroup at path.
func cgroupMemory(path string) (int64, bool) {
	dir := cgroupstat.MemoryDir(path)
	for _, f := range []string{"memory.current", "memory.usage_in_bytes"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// pssOf is a process's proportional set size (smaps_rollup), 0 when unreadable.
func pssOf(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

type procInfo struct {
	ppid     int
	comm     string
	rss      int64
	inDocker bool
}

func processTable() map[int]procInfo {
	out := map[int]procInfo{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// comm is in parentheses and may hold spaces; fields follow the last ')'.
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 22 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		rssPages, _ := strconv.ParseInt(f[21], 10, 64)
		cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		out[pid] = procInfo{ppid: ppid, comm: s[open+1 : close], rss: rssPages * int64(os.Getpagesize()), inDocker: bytes.Contains(cg, []byte("/docker/"))}
	}
	return out
}
