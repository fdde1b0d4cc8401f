package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

func TestMaxConcurrentForMemory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		host, per int64
		want      int
	}{
		{24 << 30, 512 << 20, 38}, // 0.8 × 24 GiB / 512 MiB = 38.4
		{1 << 30, 512 << 20, 1},   // 0.8 GiB fits one
		{256 << 20, 512 << 20, 1}, // never below one
		{0, 512 << 20, 1},
		{1 << 40, 1 << 20, MaxConcurrentCeiling},
	}
	for _, c := range cases {
		if got := MaxConcurrentForMemory(c.host, c.per); got != c.want {
			t.Errorf("MaxConcurrentForMemory(%d, %d) = %d, want %d", c.host, c.per, got, c.want)
		}
	}
}

func TestParseMemTotal(t *testing.T) {
	t.Parallel()
	n, err := parseMemTotal(strings.NewReader("MemFree: 1 kB\nMemTotal:       24684092 kB\n"))
	if err != nil || n != 24684092*1024 {
		t.Fatalf("parseMemTotal = %d, %v", n, err)
	}
	if _, err := parseMemTotal(strings.NewReader("nothing\n")); err == nil {
		t.Fatal("no MemTotal line: want an error")
	}
	if n, err := HostMemoryBytes(); err != nil || n <= 0 {
		t.Fatalf("HostMemoryBytes = %d, %v", n, err)
	}
}

func TestServeSectionFileEnvAndDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "aster.yaml")
	yaml := "serve:\n  addr: 0.0.0.0:9000\n  queue: 3\n  ceilings:\n    memory: 1g\n"
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ASTER_MAX_CONCURRENT": "5"}
	c, err := Load(p, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	sc, err := c.ServeSection(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, err := sc.Parse(DefaultMemoryBytes, func() (int64, error) { return 0, errors.New("unused") })
	if err != nil {
		t.Fatal(err)
	}
	if st.Addr != "0.0.0.0:9000" || st.MaxConcurrent != 5 || st.QueueSize != 3 {
		t.Errorf("addr/max/queue = %s/%d/%d", st.Addr, st.MaxConcurrent, st.QueueSize)
	}
	if st.Ceilings.MemoryBytes != 1<<30 || st.Ceilings.TimeoutMS != 10*60*1000 {
		t.Errorf("ceilings = %+v", st.Ceilings)
	}
	if st.QueueTimeout != DefaultQueueTimeout || st.MaxBodyBytes != DefaultMaxBodyBytes {
		t.Errorf("queue timeout %s, max body %d", st.QueueTimeout, st.MaxBodyBytes)
	}
}

func TestServeParseAutoAndErrors(t *testing.T) {
	t.Parallel()
	c := Default()
	sc, err := c.ServeSection(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st, err := sc.Parse(512<<20, func() (int64, error) { return 4 << 30, nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.MaxConcurrent != 6 || st.QueueSize != 24 || st.Addr != DefaultServeAddr {
		t.Errorf("auto sizing: max %d queue %d addr %s", st.MaxConcurrent, st.QueueSize, st.Addr)
	}
	bad := sc
	bad.MaxConcurrent = "0"
	bad.QueueTimeout = "soon"
	bad.MaxBody = "-1"
	_, err = bad.Parse(512<<20, func() (int64, error) { return 4 << 30, nil })
	for _, want := range []string{"max-concurrent", "queue-timeout", "max-body"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestExceedsCeiling(t *testing.T) {
	t.Parallel()
	ceil := sandbox.Limits{TimeoutMS: 60_000, MemoryBytes: 1 << 30}
	if err := ExceedsCeiling(sandbox.Limits{TimeoutMS: 60_000}, ceil); err != nil {
		t.Errorf("at the ceiling: %v", err)
	}
	err := ExceedsCeiling(sandbox.Limits{MemoryBytes: 2 << 30}, ceil)
	if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), "limits.memory 2GiB") || !strings.Contains(err.Error(), "1GiB") {
		t.Errorf("over the ceiling: %v", err)
	}
}
