package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// Defaults of `aster sandbox serve`.
const (
	DefaultServeAddr         = "127.0.0.1:8080"
	DefaultQueueTimeout      = 30 * time.Second
	DefaultMaxBodyBytes      = 64 << 20
	DefaultShutdownGrace     = 30 * time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultBodyReadTimeout   = 60 * time.Second
	DefaultFirstByteTimeout  = 5 * time.Second  // from the headers to a body's first byte
	DefaultBodyIdleTimeout   = 10 * time.Second // longest wait for more of a body
	DefaultMinBodyRate       = 32 << 10         // bytes per second a body must average, after the idle grace
	DefaultSpoolPerCeiling   = 4                // default --max-spool: this many snapshots at --max-workdir-size
	DefaultBodiesInFlight    = 4                // default --max-body-in-flight: this many bodies at --max-body
	// DefaultMCPBodiesInFlight is the same for `aster mcp --http`, lower
	// because the MCP SDK holds several copies of every body it decodes.
	DefaultMCPBodiesInFlight    = 2
	DefaultMCPSessionTimeout    = 30 * time.Minute // an idle `aster mcp --http` session is dropped after it
	DefaultMCPMaxSessions       = 1024             // `aster mcp --http` sessions open at once
	DefaultMCPSessionsPerToken  = 128              // of which one bearer token (or, without tokens, all clients) may hold
	DefaultMCPProgressInterval  = time.Second      // how often a running tool call reports progress
	DefaultWriteTimeout         = 30 * time.Second
	DefaultIdleTimeout          = 90 * time.Second
	DefaultQueuePerSlot         = 4    // queue places per sandbox slot
	MaxConcurrentCeiling        = 1024 // --max-concurrent above this is refused
	HostMemoryShareForSandboxes = 0.8  // share of MemTotal sandboxes may use by default
)

// DefaultCeilings are the largest limits a request to the API may ask for.
// A request over one is refused (400), never clamped silently.
func DefaultCeilings() LimitsConfig {
	return LimitsConfig{
		Timeout:       "10m",
		Memory:        "4g",
		CPUs:          "2",
		Pids:          "1024",
		OutputLimit:   "16m",
		OutputCeiling: "256m",
		WorkdirSize:   "1g",
		TmpSize:       "1g",
	}
}

// ServeConfig is the `serve:` section of aster.yaml, for `aster sandbox serve`.
// Durations and sizes are in human units; an empty field takes its default.
type ServeConfig struct {
	Addr string `yaml:"addr"`
	// MaxConcurrent is a number, or "auto"/empty: sized from host memory.
	MaxConcurrent string `yaml:"max_concurrent"`
	// Queue is a number, or empty: DefaultQueuePerSlot × MaxConcurrent.
	Queue             string `yaml:"queue"`
	QueueTimeout      string `yaml:"queue_timeout"`
	TokenFile         string `yaml:"token_file"`
	MaxBody           string `yaml:"max_body"`
	ShutdownGrace     string `yaml:"shutdown_grace"`
	ReadHeaderTimeout string `yaml:"read_header_timeout"`
	BodyReadTimeout   string `yaml:"body_read_timeout"`
	WriteTimeout      string `yaml:"write_timeout"`
	IdleTimeout       string `yaml:"idle_timeout"`
	// FirstByteTimeout, BodyIdleTimeout and MinBodyRate pace a request body
	// (see sandboxapi.Pace); MinBodyRate is a size per second ("32k"), 0 off.
	FirstByteTimeout string `yaml:"first_byte_timeout"`
	BodyIdleTimeout  string `yaml:"body_idle_timeout"`
	MinBodyRate      string `yaml:"min_body_rate"`
	// MaxSpool is the disk all snapshots being spooled or held may take at
	// once; empty is DefaultSpoolPerCeiling × ceilings.workdir_size.
	MaxSpool string `yaml:"max_spool"`
	// MaxBodyInFlight is the request-body bytes held in memory at once;
	// empty is DefaultBodiesInFlight × max_body.
	MaxBodyInFlight string `yaml:"max_body_in_flight"`
	// MaxUploadsPerClient bounds one remote address's uploads in progress;
	// empty is half the upload slots (max_concurrent + queue), 0 no limit.
	MaxUploadsPerClient string       `yaml:"max_uploads_per_client"`
	Ceilings            LimitsConfig `yaml:"ceilings"`
	// Runs and Callbacks configure the asynchronous runs of /v1/runs.
	Runs      RunsConfig      `yaml:"runs"`
	Callbacks CallbacksConfig `yaml:"callbacks"`
	// Sessions bound the long-lived sandboxes of /v1/sessions.
	Sessions SessionsConfig `yaml:"sessions"`
}

// envVars binds the ASTER_* variables of the `serve:` section to the fields of s.
func (s *ServeConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_SERVE_ADDR", &s.Addr, "address `aster sandbox serve` listens on"),
		str("ASTER_MAX_CONCURRENT", &s.MaxConcurrent, "sandboxes alive at once (auto: from host memory)"),
		str("ASTER_QUEUE", &s.Queue, "runs waiting behind them (default 4 × max-concurrent)"),
		str("ASTER_QUEUE_TIMEOUT", &s.QueueTimeout, "how long a run may wait in the queue"),
		str("ASTER_TOKEN_FILE", &s.TokenFile, "bearer tokens, one a line"),
		str("ASTER_MAX_BODY", &s.MaxBody, "largest request body"),
		str("ASTER_MAX_SPOOL", &s.MaxSpool, "disk all spooled snapshots and /v1/test dependency archives may take at once (default 4 × max-workdir-size)"),
		str("ASTER_MAX_BODY_IN_FLIGHT", &s.MaxBodyInFlight, "request-body bytes held in memory at once (default 4 × max-body)"),
		str("ASTER_RUNS_DB", &s.Runs.DB, "SQLite file of the API's asynchronous runs (off: none)"),
		str("ASTER_RUNS_DATABASE_URL", &s.Runs.DatabaseURL, "postgres://... database of the API's asynchronous runs (replaces the SQLite file)"),
		str("ASTER_MAX_SESSIONS", &s.Sessions.Max, "sessions alive at once (default half of max-concurrent)"),
	}
}

// ServeSection decodes the `serve:` section of c (absent: all defaults) and
// applies the ASTER_* variables of envVars over it.
func (c Config) ServeSection(getenv func(string) string) (ServeConfig, error) {
	var s ServeConfig
	if err := c.loadSection("serve", &s, getenv); err != nil {
		return s, err
	}
	def := DefaultCeilings()
	fill := fillBlank
	fill(&s.Addr, DefaultServeAddr)
	fill(&s.QueueTimeout, DefaultQueueTimeout.String())
	fill(&s.MaxBody, units.FormatBytes(DefaultMaxBodyBytes))
	fill(&s.ShutdownGrace, DefaultShutdownGrace.String())
	fill(&s.ReadHeaderTimeout, DefaultReadHeaderTimeout.String())
	fill(&s.BodyReadTimeout, DefaultBodyReadTimeout.String())
	fill(&s.WriteTimeout, DefaultWriteTimeout.String())
	fill(&s.IdleTimeout, DefaultIdleTimeout.String())
	fill(&s.FirstByteTimeout, DefaultFirstByteTimeout.String())
	fill(&s.BodyIdleTimeout, DefaultBodyIdleTimeout.String())
	fill(&s.MinBodyRate, units.FormatBytes(DefaultMinBodyRate))
	for _, f := range sandbox.LimitFields() {
		fill(s.Ceilings.Field(f.Name), *def.Field(f.Name))
	}
	return s, nil
}

// ServeSettings are the parsed, validated values of a ServeConfig.
type ServeSettings struct {
	Addr              string
	MaxConcurrent     int
	QueueSize         int
	QueueTimeout      time.Duration
	TokenFile         string
	MaxBodyBytes      int64
	ShutdownGrace     time.Duration
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	FirstByteTimeout  time.Duration
	BodyIdleTimeout   time.Duration
	// MinBodyRateBytes is bytes per second; 0 is not checked.
	MinBodyRateBytes     int64
	MaxSpoolBytes        int64
	MaxBodyInFlightBytes int64
	// MaxUploadsPerClient is 0 for no limit.
	MaxUploadsPerClient int
	Ceilings            sandbox.Limits
}

// Parse validates s. defaultMemoryBytes is the per-run default memory limit,
// used to size MaxConcurrent when it is "auto"; hostMemory returns the host's
// memory in bytes (HostMemoryBytes in production).
func (s ServeConfig) Parse(defaultMemoryBytes int64, hostMemory func() (int64, error)) (ServeSettings, error) {
	out := ServeSettings{Addr: strings.TrimSpace(s.Addr), TokenFile: s.TokenFile}
	var errs []error
	dur := func(name, v string, dst *time.Duration, min time.Duration) {
		d, err := units.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		case d < min:
			errs = append(errs, fmt.Errorf("%s %s is under %s", name, d, min))
		default:
			*dst = d
		}
	}
	dur("queue-timeout", s.QueueTimeout, &out.QueueTimeout, time.Millisecond)
	dur("shutdown-grace", s.ShutdownGrace, &out.ShutdownGrace, 0)
	dur("read-header-timeout", s.ReadHeaderTimeout, &out.ReadHeaderTimeout, 10*time.Millisecond)
	dur("body-read-timeout", s.BodyReadTimeout, &out.BodyReadTimeout, 10*time.Millisecond)
	dur("write-timeout", s.WriteTimeout, &out.WriteTimeout, 10*time.Millisecond)
	dur("idle-timeout", s.IdleTimeout, &out.IdleTimeout, 10*time.Millisecond)
	dur("first-byte-timeout", s.FirstByteTimeout, &out.FirstByteTimeout, 10*time.Millisecond)
	dur("body-idle-timeout", s.BodyIdleTimeout, &out.BodyIdleTimeout, 10*time.Millisecond)
	if n, err := units.ParseBytes(strings.TrimSuffix(strings.TrimSpace(s.MinBodyRate), "/s")); err != nil {
		errs = append(errs, fmt.Errorf("min-body-rate: %w", err))
	} else {
		out.MinBodyRateBytes = n
	}
	if n, err := units.ParseBytes(s.MaxBody); err != nil {
		errs = append(errs, fmt.Errorf("max-body: %w", err))
	} else if n < 1<<10 {
		errs = append(errs, fmt.Errorf("max-body %s is under 1KiB", units.FormatBytes(n)))
	} else {
		out.MaxBodyBytes = n
	}
	if out.Addr == "" {
		errs = append(errs, errors.New("addr is empty"))
	}
	switch v := strings.TrimSpace(s.MaxConcurrent); v {
	case "", "auto":
		mem, err := hostMemory()
		if err != nil {
			errs = append(errs, fmt.Errorf("max-concurrent auto: %w (set --max-concurrent)", err))
		} else {
			out.MaxConcurrent = MaxConcurrentForMemory(mem, defaultMemoryBytes)
		}
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxConcurrentCeiling {
			errs = append(errs, fmt.Errorf("max-concurrent %q: want a whole number from 1 to %d, or auto", v, MaxConcurrentCeiling))
		} else {
			out.MaxConcurrent = n
		}
	}
	if v := strings.TrimSpace(s.Queue); v == "" {
		out.QueueSize = DefaultQueuePerSlot * out.MaxConcurrent
	} else if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 100*MaxConcurrentCeiling {
		errs = append(errs, fmt.Errorf("queue %q: want a whole number from 0 to %d", v, 100*MaxConcurrentCeiling))
	} else {
		out.QueueSize = n
	}
	if v := strings.TrimSpace(s.MaxUploadsPerClient); v == "" {
		out.MaxUploadsPerClient = (out.MaxConcurrent + out.QueueSize + 1) / 2
	} else if n, err := strconv.Atoi(v); err != nil || n < 0 {
		errs = append(errs, fmt.Errorf("max-uploads-per-client %q: want a whole number, 0 for no limit", v))
	} else {
		out.MaxUploadsPerClient = n
	}
	ceil, err := s.Ceilings.Parse()
	if err != nil {
		errs = append(errs, fmt.Errorf("ceilings: %w", err))
	}
	out.Ceilings = ceil
	// A total below the largest single request would refuse that request
	// whatever else is going on: refused here instead.
	total := func(name, v string, dst *int64, per int64, what string, unit int64) {
		if strings.TrimSpace(v) == "" {
			*dst = per * unit
			return
		}
		n, err := units.ParseBytes(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		case unit > 0 && n < unit:
			errs = append(errs, fmt.Errorf("%s %s is under %s %s: such a request could never be served", name, units.FormatBytes(n), what, units.FormatBytes(unit)))
		default:
			*dst = n
		}
	}
	workdir := ceil.WorkdirBytes
	if workdir == 0 {
		workdir = DefaultWorkdirBytes
	}
	total("max-spool", s.MaxSpool, &out.MaxSpoolBytes, DefaultSpoolPerCeiling, "max-workdir-size", workdir)
	total("max-body-in-flight", s.MaxBodyInFlight, &out.MaxBodyInFlightBytes, DefaultBodiesInFlight, "max-body", out.MaxBodyBytes)
	if len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	return out, nil
}

// MaxConcurrentForMemory sizes the sandbox slots so that every slot at the
// default memory limit fits in HostMemoryShareForSandboxes of the host's
// memory: at least 1, at most MaxConcurrentCeiling.
func MaxConcurrentForMemory(hostBytes, perRunBytes int64) int {
	if perRunBytes <= 0 || hostBytes <= 0 {
		return 1
	}
	n := int(float64(hostBytes) * HostMemoryShareForSandboxes / float64(perRunBytes))
	return max(1, min(n, MaxConcurrentCeiling))
}

// HostMemoryBytes returns MemTotal from /proc/meminfo.
func HostMemoryBytes() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("host memory: %w", err)
	}
	defer f.Close()
	return parseMemTotal(f)
}

func parseMemTotal(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || n <= 0 {
			break
		}
		unit := int64(1)
		if len(fields) > 1 && strings.EqualFold(fields[1], "kB") {
			unit = 1024
		}
		return n * unit, nil
	}
	return 0, errors.New("host memory: no MemTotal line in /proc/meminfo")
}
