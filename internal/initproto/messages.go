package initproto

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/asterhq/aster/internal/textclip"
)

// Limits on what a job header may carry. They keep a hostile or buggy host from
// making init allocate without bound, and a hostile init's result from doing the
// same to the host.
const (
	MaxArgs       = 4096
	MaxArgBytes   = 256 << 10
	MaxEnvEntries = 1024
	MaxErrorText  = 4 << 10
)

// Hello is aster-init's first frame: it proves init is up and speaks Version.
//
// Before the job, the host may also send hello frames of its own (a request
// with a Seq); init answers each with a hello carrying the same Seq. A runtime
// whose attach stream can miss what init wrote before the host was attached
// (Kubernetes) uses that to learn when it is: the answer to its latest request
// has arrived.
type Hello struct {
	Version int `json:"version"`
	PID     int `json:"pid"`
	// Seq is 0 in the hello init sends at start, and echoes the host's request otherwise.
	Seq int64 `json:"seq,omitempty"`
	// Execs, in the hello of a session's holder, says it serves the
	// session's execs itself over exec channels (TypeChan).
	Execs bool `json:"execs,omitempty"`
}

// JobHeader is the first frame the host sends.
type JobHeader struct {
	Version int      `json:"version"`
	Argv    []string `json:"argv"`
	// Env is the complete environment of the command, as KEY=VALUE.
	Env []string `json:"env"`
	// Dir is the working directory, relative to the workspace root (/work).
	Dir       string `json:"dir"`
	TimeoutMS int64  `json:"timeout_ms"`
	// KillGraceMS is how long the job has between SIGTERM and SIGKILL at the deadline.
	KillGraceMS        int64 `json:"kill_grace_ms"`
	OutputCeilingBytes int64 `json:"output_ceiling_bytes"`
	// Workspace says a tar stream follows (TypeTar frames, then TypeTarEnd).
	Workspace         bool  `json:"workspace"`
	WorkspaceMaxBytes int64 `json:"workspace_max_bytes"`
	WorkspaceMaxFiles int64 `json:"workspace_max_files"`
	// Stdin says stdin frames follow the workspace; otherwise stdin is empty.
	Stdin bool `json:"stdin"`
	// EgressPort, when not 0, is the loopback port where init serves the
	// CONNECT proxy whose tunnels the host relays (tunnel frames).
	EgressPort int `json:"egress_port,omitempty"`
	// Export asks init to send /work as a tar stream (export frames) after the
	// command exited on its own, before the result.
	Export bool `json:"export,omitempty"`
	// PTY, when set, runs the command on a terminal of this size that init
	// allocates inside the sandbox: the terminal's output comes as stdout
	// frames (no output ceiling: a terminal is streamed, never gathered),
	// stdin frames are typed into it, TypeResize frames change its size. The
	// command leads a session of its own with the terminal as its
	// controlling terminal; every process of that session ends with the job.
	PTY *TermSize `json:"pty,omitempty"`
}

// ExportEnd ends the export stream. Error says why /work was not (fully)
// exported; Skipped counts entries left out (sockets, devices, FIFOs).
type ExportEnd struct {
	Error   string `json:"error,omitempty"`
	Files   int64  `json:"files"`
	Bytes   int64  `json:"bytes"`
	Skipped int    `json:"skipped"`
}

// DecodeExportEnd parses and range-checks an export end payload.
func DecodeExportEnd(p []byte) (ExportEnd, error) {
	var e ExportEnd
	if err := json.Unmarshal(p, &e); err != nil {
		return ExportEnd{}, fmt.Errorf("export end frame: %w", err)
	}
	if e.Files < 0 || e.Bytes < 0 || e.Skipped < 0 {
		return ExportEnd{}, fmt.Errorf("export end frame: negative counter")
	}
	e.Error = textclip.Head(e.Error, MaxErrorText, "…")
	return e, nil
}

// Validate checks a header before init acts on it.
func (h *JobHeader) Validate() error {
	if h.Version != Version {
		return fmt.Errorf("protocol version %d, want %d", h.Version, Version)
	}
	if len(h.Argv) == 0 || h.Argv[0] == "" {
		return fmt.Errorf("empty argv")
	}
	if len(h.Argv) > MaxArgs {
		return fmt.Errorf("%d arguments exceed %d", len(h.Argv), MaxArgs)
	}
	total := 0
	for _, a := range h.Argv {
		total += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument contains a NUL byte")
		}
	}
	if total > MaxArgBytes {
		return fmt.Errorf("arguments total %d bytes, over %d", total, MaxArgBytes)
	}
	if len(h.Env) > MaxEnvEntries {
		return fmt.Errorf("%d environment entries exceed %d", len(h.Env), MaxEnvEntries)
	}
	for _, e := range h.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" || strings.IndexByte(e, 0) >= 0 {
			return fmt.Errorf("malformed environment entry %q", textclip.Head(e, 64, "…"))
		}
	}
	if h.Dir == "" || strings.HasPrefix(h.Dir, "/") || h.Dir == ".." || strings.HasPrefix(h.Dir, "../") || strings.Contains(h.Dir, "/../") || strings.HasSuffix(h.Dir, "/..") {
		return fmt.Errorf("working directory %q is not relative to the workspace", h.Dir)
	}
	if h.EgressPort < 0 || h.EgressPort > 65535 {
		return fmt.Errorf("egress port %d out of range", h.EgressPort)
	}
	if h.PTY != nil {
		if err := h.PTY.Validate(); err != nil {
			return err
		}
	}
	if h.TimeoutMS <= 0 || h.OutputCeilingBytes <= 0 {
		return fmt.Errorf("timeout and output ceiling must be positive")
	}
	return nil
}

// ResultFrame is aster-init's last frame. It is reported by code that runs beside
// the untrusted program, so the host treats it as data about the run, checks its
// ranges, and never bases a security decision on it.
type ResultFrame struct {
	// ExitCode is the command's exit code, or -1 when a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal is the number of the signal that ended the command, 0 if none.
	Signal int `json:"signal"`
	// CPUTimeMS is user+system CPU of every reaped process of the job.
	CPUTimeMS int64 `json:"cpu_time_ms"`
	// PeakRSSBytes is the peak resident set of the job's largest process.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// CgroupPeakBytes is the sandbox cgroup's peak memory use, when readable.
	CgroupPeakBytes int64 `json:"cgroup_peak_bytes"`
	// OOMKills counts OOM kills in the sandbox's cgroup while the job ran.
	OOMKills int64 `json:"oom_kills"`
	// TimedOut says init killed the job at its deadline.
	TimedOut bool `json:"timed_out"`
	// OutputLimit names the stream ("stdout"/"stderr") that passed the ceiling.
	OutputLimit string `json:"output_limit,omitempty"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	// DurationMS is the command's wall time, from exec to exit.
	DurationMS int64 `json:"duration_ms"`
	// SetupError says the command never started: bad workspace, exec failure.
	SetupError string `json:"setup_error,omitempty"`
	// Leftovers counts processes init had to kill after the command exited.
	Leftovers int `json:"leftovers"`
}

// DecodeResult parses and range-checks a result payload.
func DecodeResult(p []byte) (ResultFrame, error) {
	var r ResultFrame
	if err := json.Unmarshal(p, &r); err != nil {
		return ResultFrame{}, fmt.Errorf("result frame: %w", err)
	}
	switch {
	case r.ExitCode < -1 || r.ExitCode > 255:
		return ResultFrame{}, fmt.Errorf("result frame: exit code %d out of range", r.ExitCode)
	case r.Signal < 0 || r.Signal > 64:
		return ResultFrame{}, fmt.Errorf("result frame: signal %d out of range", r.Signal)
	case r.CPUTimeMS < 0 || r.PeakRSSBytes < 0 || r.CgroupPeakBytes < 0 || r.OOMKills < 0 || r.DurationMS < 0 || r.StdoutBytes < 0 || r.StderrBytes < 0 || r.Leftovers < 0:
		return ResultFrame{}, fmt.Errorf("result frame: negative counter")
	case r.OutputLimit != "" && r.OutputLimit != "stdout" && r.OutputLimit != "stderr":
		return ResultFrame{}, fmt.Errorf("result frame: unknown stream %q", textclip.Head(r.OutputLimit, 16, "…"))
	}
	r.SetupError = textclip.Head(r.SetupError, MaxErrorText, "…")
	return r, nil
}

// DecodeHello parses the hello frame.
func DecodeHello(p []byte) (Hello, error) {
	var h Hello
	if err := json.Unmarshal(p, &h); err != nil {
		return Hello{}, fmt.Errorf("hello frame: %w", err)
	}
	if h.Version != Version {
		return Hello{}, fmt.Errorf("hello frame: init speaks protocol %d, want %d", h.Version, Version)
	}
	return h, nil
}
