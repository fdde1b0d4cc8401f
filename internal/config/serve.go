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
)

// Defaults of `aster sandbox serve`.
const (
	DefaultServeAddr            = "127.0.0.1:8080"
	DefaultQueueTimeout         = 30 * time.Second
	DefaultMaxBodyBytes         = 64 << 20
	DefaultShutdownGrace        = 30 * time.Second
	DefaultReadHeaderTimeout    = 10 * time.Second
	DefaultBodyReadTimeout      = 60 * time.Second
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
	Queue             string       `yaml:"queue"`
	QueueTimeout      string       `yaml:"queue_timeout"`
	TokenFile         string       `yaml:"token_file"`
	MaxBody           string       `yaml:"max_body"`
	ShutdownGrace     string       `yaml:"shutdown_grace"`
	ReadHeaderTimeout string       `yaml:"read_header_timeout"`
	BodyReadTimeout   string       `yaml:"body_read_timeout"`
	WriteTimeout      string       `yaml:"write_timeout"`
	IdleTimeout       string       `yaml:"idle_timeout"`
	Ceilings          LimitsConfig `yaml:"ceilings"`
}

// ServeEnvVars lists the variables ServeSection reads.
var ServeEnvVars = map[string]string{
	"ASTER_SERVE_ADDR":     "address `aster sandbox serve` listens on",
	"ASTER_MAX_CONCURRENT": "sandboxes alive at once (auto: from host memory)",
	"ASTER_QUEUE":          "runs waiting behind them (default 4 × max-concurrent)",
	"ASTER_QUEUE_TIMEOUT":  "how long a run may wait in the queue",
	"ASTER_TOKEN_FILE":     "bearer tokens, one a line",
	"ASTER_MAX_BODY":       "largest request body",
}

// ServeSection decodes the `serve:` section of c (absent: all defaults) and
// applies the ASTER_* variables above over it.
func (c Config) ServeSection(getenv func(string) string) (ServeConfig, error) {
	var s ServeConfig
	if err := c.decodeSection("serve", &s); err != nil {
		return s, err
	}
	set := envSetter(getenv)
	set(&s.Addr, "ASTER_SERVE_ADDR")
	set(&s.MaxConcurrent, "ASTER_MAX_CONCURRENT")
	set(&s.Queue, "ASTER_QUEUE")
	set(&s.QueueTimeout, "ASTER_QUEUE_TIMEOUT")
	set(&s.TokenFile, "ASTER_TOKEN_FILE")
	set(&s.MaxBody, "ASTER_MAX_BODY")
	def := DefaultCeilings()
	fill := func(d *string, v string) {
		if strings.TrimSpace(*d) == "" {
			*d = v
		}
	}
	fill(&s.Addr, DefaultServeAddr)
	fill(&s.QueueTimeout, DefaultQueueTimeout.String())
	fill(&s.MaxBody, FormatBytes(DefaultMaxBodyBytes))
	fill(&s.ShutdownGrace, DefaultShutdownGrace.String())
	fill(&s.ReadHeaderTimeout, DefaultReadHeaderTimeout.String())
	fill(&s.BodyReadTimeout, DefaultBodyReadTimeout.String())
	fill(&s.WriteTimeout, DefaultWriteTimeout.String())
	fill(&s.IdleTimeout, DefaultIdleTimeout.String())
	fill(&s.Ceilings.Timeout, def.Timeout)
	fill(&s.Ceilings.Memory, def.Memory)
	fill(&s.Ceilings.CPUs, def.CPUs)
	fill(&s.Ceilings.Pids, def.Pids)
	fill(&s.Ceilings.OutputLimit, def.OutputLimit)
	fill(&s.Ceilings.OutputCeiling, def.OutputCeiling)
	fill(&s.Ceilings.WorkdirSize, def.WorkdirSize)
	fill(&s.Ceilings.TmpSize, def.TmpSize)
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
	Ceilings          sandbox.Limits
}

// Parse validates s. defaultMemoryBytes is the per-run default memory limit,
// used to size MaxConcurrent when it is "auto"; hostMemory returns the host's
// memory in bytes (HostMemoryBytes in production).
func (s ServeConfig) Parse(defaultMemoryBytes int64, hostMemory func() (int64, error)) (ServeSettings, error) {
	out := ServeSettings{Addr: strings.TrimSpace(s.Addr), TokenFile: s.TokenFile}
	var errs []error
	dur := func(name, v string, dst *time.Duration, min time.Duration) {
		d, err := ParseDuration(v)
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
	if n, err := ParseBytes(s.MaxBody); err != nil {
		errs = append(errs, fmt.Errorf("max-body: %w", err))
	} else if n < 1<<10 {
		errs = append(errs, fmt.Errorf("max-body %s is under 1KiB", FormatBytes(n)))
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
	ceil, err := s.Ceilings.Parse()
	if err != nil {
		errs = append(errs, fmt.Errorf("ceilings: %w", err))
	}
	out.Ceilings = ceil
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

// ExceedsCeiling returns an ErrInvalidSpec naming the first limit of l that is
// above its ceiling, or nil. Zero fields of l (use the default) are not checked.
func ExceedsCeiling(l, ceil sandbox.Limits) error {
	type check struct {
		name string
		v, c int64
		unit func(int64) string
	}
	for _, c := range []check{
		{"timeout", l.TimeoutMS, ceil.TimeoutMS, fmtMS},
		{"memory", l.MemoryBytes, ceil.MemoryBytes, FormatBytes},
		{"cpus", l.MilliCPUs, ceil.MilliCPUs, fmtCPUs},
		{"pids", l.Pids, ceil.Pids, fmtInt},
		{"output_limit", l.OutputBytes, ceil.OutputBytes, FormatBytes},
		{"output_ceiling", l.OutputCeilingBytes, ceil.OutputCeilingBytes, FormatBytes},
		{"workdir_size", l.WorkdirBytes, ceil.WorkdirBytes, FormatBytes},
		{"tmp_size", l.TmpBytes, ceil.TmpBytes, FormatBytes},
	} {
		if c.c > 0 && c.v > c.c {
			return sandbox.Invalidf("limits.%s %s is over this server's ceiling of %s", c.name, c.unit(c.v), c.unit(c.c))
		}
	}
	return nil
}
