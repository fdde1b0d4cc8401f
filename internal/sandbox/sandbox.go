// Package sandbox is the domain of Aster's isolation layer: what a caller asks
// for (Spec, Limits), what it gets back (Result, Status), the error classes every
// layer maps to, the Manager that validates, admits and runs a Spec, and the
// Runtime interface that each isolation backend implements without changing
// its callers. The runtimes, each a package below this one:
//
//   - docker: a container on a Docker-compatible engine, over the moby client;
//   - oci: an OCI runtime binary driven directly, with no daemon: crun by
//     default, runc, or runsc (gVisor, Name "gvisor");
//   - kubernetes: one Pod per run, over client-go;
//   - microvm: one QEMU microVM per run, with a guest kernel of its own.
//
// Every one of them runs aster-init as the sandbox's PID 1 and speaks the same
// framed protocol with it (runtimekit.Session), so a Result means the same
// thing on each. What only the runtimes share is in runtimekit. remote is not
// a runtime but a Manager elsewhere: the public client of an
// `aster sandbox serve`, in the Manager's shape.
package sandbox

import (
	"context"
	"io"
	"net"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox/hardening"
)

// Status says how a run ended. Every Result carries exactly one. It is the
// public api.Status, so a Result's status needs no translation on the wire.
type Status = api.Status

// The statuses a run can end with (see api.Status for what each means).
const (
	StatusOK          = api.StatusOK
	StatusExitNonzero = api.StatusExitNonzero
	StatusTimeout     = api.StatusTimeout
	StatusOOM         = api.StatusOOM
	StatusOutputLimit = api.StatusOutputLimit
	StatusKilled      = api.StatusKilled
	StatusError       = api.StatusError
)

// Statuses lists every status, in documentation order.
var Statuses = []Status{StatusOK, StatusExitNonzero, StatusTimeout, StatusOOM, StatusOutputLimit, StatusKilled, StatusError}

// Limits caps one run. Zero values are replaced by the Manager's defaults before a
// run starts; the Manager's Bounds then reject a zero, negative or absurd value,
// and every runtime refuses a zero sandbox limit again (PrepareOptions.Validate).
type Limits struct {
	TimeoutMS          int64 `json:"timeout_ms,omitempty"`
	MemoryBytes        int64 `json:"memory_bytes,omitempty"`
	MilliCPUs          int64 `json:"milli_cpus,omitempty"` // 1000 = one CPU
	Pids               int64 `json:"pids,omitempty"`
	OutputBytes        int64 `json:"output_bytes,omitempty"`         // bytes kept per stream (head + tail)
	OutputCeilingBytes int64 `json:"output_ceiling_bytes,omitempty"` // past this per stream the job is ended
	WorkdirBytes       int64 `json:"workdir_bytes,omitempty"`        // size of the /work tmpfs
	TmpBytes           int64 `json:"tmp_bytes,omitempty"`            // size of the /tmp tmpfs
}

// TmpfsInodes is the inode cap of a tmpfs of the given size (hardening.TmpfsInodes).
func TmpfsInodes(sizeBytes int64) int64 { return hardening.TmpfsInodes(sizeBytes) }

// Timeout returns the wall-clock limit as a duration.
func (l Limits) Timeout() time.Duration { return time.Duration(l.TimeoutMS) * time.Millisecond }

// Workspace is what is placed at /work before the command starts. At most one of
// Files and Tar is used; both empty means an empty /work.
type Workspace struct {
	// Files maps a relative path to its content.
	Files map[string][]byte
	// Tar is an uncompressed tar stream. It is validated (no absolute or ../ paths,
	// no links leaving the tree, no device nodes, size and entry caps) while it is
	// streamed to the sandbox; the host never unpacks it.
	Tar io.Reader
	// Filtered says Tar already passed workspace.Filter (a snapshot the caller
	// spooled and checked itself), so the Manager does not spool and check it
	// again before admission. The archive is still filtered while it streams to
	// the sandbox, so a wrong claim can only delay a refusal, never skip it.
	Filtered bool
}

// Spec is one request to run a command in a fresh sandbox.
type Spec struct {
	// ID names the run; empty means one is generated.
	ID    string
	Image string
	// Argv is executed directly: there is no implicit shell.
	Argv []string
	// Env is the whole environment of the command (plus PATH, HOME and LANG
	// defaults when absent). The host's environment never reaches a sandbox.
	Env       map[string]string
	Workdir   string // relative to /work; empty means /work
	Workspace Workspace
	Stdin     io.Reader
	Limits    Limits
	// OnOutput, when set, receives the job's output as it arrives, before capping.
	// It is called from one goroutine at a time; it must not block for long.
	OnOutput func(stream Stream, data []byte)
	// Egress, when set, is the run's only way out: aster-init serves an HTTP
	// CONNECT proxy on 127.0.0.1:EgressProxyPort inside the sandbox and relays
	// each tunnel over the init protocol to Egress on the host, which decides.
	// The sandbox still has no network device. nil: no way out at all.
	Egress Dialer
	// EgressPort is that proxy's port when Egress is set; 0 is
	// EgressProxyPort (a session gives each of its concurrent execs one).
	EgressPort int
	// Export, when set, receives /work as an uncompressed tar stream after the
	// command exits (what an install phase produced, for the next phase). It is
	// written by init, so the host caps it and treats it as untrusted.
	Export io.Writer
}

// EgressProxyPort is the loopback port inside a sandbox where aster-init
// accepts CONNECT requests when a run has an Egress.
const EgressProxyPort = 3128

// Dialer opens the host side of a tunnel a job asked for.
type Dialer interface {
	// DialEgress is called once per CONNECT host:port made inside the sandbox.
	// host is the name as the job wrote it (untrusted). The error's text is
	// shown to the job as the refusal reason, so it must carry no secret; an
	// error with a method EgressRefused() bool that returns true is a refusal
	// by policy (the job's proxy answers 403), any other a failure to reach
	// an allowed destination (502). A returned conn with CloseWrite (a
	// *net.TCPConn) gets half-closes relayed.
	DialEgress(ctx context.Context, host string, port int) (net.Conn, error)
}

// Stream names an output stream (the public api.Stream).
type Stream = api.Stream

// The two output streams.
const (
	Stdout = api.Stdout
	Stderr = api.Stderr
)

// Output is one captured stream: its first and last bytes when it was longer
// than the cap, with a marker between them saying how much was dropped.
type Output struct {
	Data         []byte
	Truncated    bool
	TotalBytes   int64 // bytes the job wrote to this stream
	DroppedBytes int64 // bytes not kept
}

// Result is what a run produced. Every field is filled for every status: a run
// that was killed still returns the output it wrote before it was killed.
type Result struct {
	ID              string
	Status          Status
	ExitCode        int    // -1 when the command never exited on its own
	Signal          string // e.g. "SIGKILL" when a signal ended the command
	Stdout          Output
	Stderr          Output
	Duration        time.Duration // wall time from job start to result
	CPUTime         time.Duration // user+system time of the job's processes
	PeakMemoryBytes int64         // peak resident memory of the job's largest process
	OOMKilled       bool
	Runtime         string // "docker", "oci", "kubernetes"
	Image           string
	ImageDigest     string
	// Error explains StatusError (and adds context to other statuses); never a secret.
	Error string
	// Timings records where the wall time went (create, start, job, teardown).
	Timings map[string]time.Duration
	// Export reports what Spec.Export received; nil when no export was asked.
	// /work is exported only when the command exited on its own (any exit
	// code); a failed export of such a run makes it StatusError.
	Export *ExportReport
}

// Runtime runs sandboxes. Implementations apply every hardening setting
// themselves; nothing in a Spec can relax them.
type Runtime interface {
	// Name is the runtime's short name, as reported in Result.Runtime.
	Name() string
	// Prepare creates and starts a sandbox for an image and limits profile, with
	// aster-init running and waiting for a job. The caller must Close it.
	Prepare(ctx context.Context, opts PrepareOptions) (Instance, error)
	// Check reports whether the runtime can run sandboxes now (engine reachable).
	Check(ctx context.Context) error
	// ImageInfo resolves an image to its digest; ErrUnknownImage when absent.
	ImageInfo(ctx context.Context, image string) (ImageInfo, error)
	// List returns every sandbox this runtime manages (for the reaper).
	List(ctx context.Context) ([]Managed, error)
	// Remove destroys a sandbox by id; an already-gone sandbox is not an error.
	Remove(ctx context.Context, id string) error
}

// PrepareOptions describes the sandbox to get ready. The limits that shape the
// container (memory, CPU, pids, tmpfs sizes) are fixed here; the per-job ones
// (timeout, output) travel with the job.
type PrepareOptions struct {
	RunID  string
	Image  string
	Limits Limits
	// Deadline is when the reaper may remove this sandbox regardless of its state.
	Deadline time.Time
}

// Instance is one prepared sandbox. It runs exactly one job and is then destroyed.
type Instance interface {
	ID() string
	// Run sends the job and blocks until the result. It never returns a nil
	// Result with a nil error; on failure the Result says StatusError.
	Run(ctx context.Context, job Job) (Result, error)
	// Close destroys the sandbox. Safe to call more than once and after Run.
	Close(ctx context.Context) error
}

// Job is the per-run part of a Spec, sent to a prepared Instance.
type Job struct {
	Argv      []string
	Env       map[string]string
	Workdir   string
	Workspace Workspace
	Stdin     io.Reader
	Limits    Limits
	OnOutput  func(stream Stream, data []byte)
	Egress    Dialer
	// EgressPort is where aster-init serves the CONNECT proxy when Egress
	// is set; 0 is EgressProxyPort. A session's concurrent execs each
	// get their own.
	EgressPort int
	Export     io.Writer
	// Terminal, when set, runs the job on a terminal that aster-init
	// allocates inside the sandbox (session terminals only).
	Terminal *Terminal
}

// JobFromSpec returns the per-run part of a spec.
func JobFromSpec(s Spec) Job {
	return Job{Argv: s.Argv, Env: s.Env, Workdir: s.Workdir, Workspace: s.Workspace, Stdin: s.Stdin, Limits: s.Limits, OnOutput: s.OnOutput,
		Egress: s.Egress, EgressPort: s.EgressPort, Export: s.Export}
}

// ImageInfo describes a resolved image.
type ImageInfo struct {
	Name   string
	Digest string
}

// Managed is a sandbox found by listing the runtime.
type Managed struct {
	ID       string
	RunID    string
	Deadline time.Time // zero when the label is missing or unreadable
	State    string
	Created  time.Time
}
