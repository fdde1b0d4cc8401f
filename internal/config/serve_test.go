package config

import (
	"errors"
	"strings"
	"testing"
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
	yaml := "serve:\n  addr: 0.0.0.0:9000\n  queue: 3\n  ceilings:\n    memory: 1g\n"
	p := writeConfig(t, yaml)
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

// The body and upload bounds of SECURITY L1/L3/L4: derived defaults, and
// totals that could never serve one maximal request refused.
func TestServeBodyBounds(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	sc, err := Default().ServeSection(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	host := func() (int64, error) { return 4 << 30, nil }
	st, err := sc.Parse(512<<20, host)
	if err != nil {
		t.Fatal(err)
	}
	if st.MaxSpoolBytes != DefaultSpoolPerCeiling<<30 || st.MaxBodyInFlightBytes != DefaultBodiesInFlight*DefaultMaxBodyBytes {
		t.Errorf("spool %d, bodies in flight %d", st.MaxSpoolBytes, st.MaxBodyInFlightBytes)
	}
	if st.MaxUploadsPerClient != (6+24+1)/2 || st.FirstByteTimeout != DefaultFirstByteTimeout ||
		st.BodyIdleTimeout != DefaultBodyIdleTimeout || st.MinBodyRateBytes != DefaultMinBodyRate {
		t.Errorf("per client %d, first byte %s, idle %s, rate %d", st.MaxUploadsPerClient, st.FirstByteTimeout, st.BodyIdleTimeout, st.MinBodyRateBytes)
	}
	set := sc
	set.MaxSpool, set.MaxBodyInFlight, set.MaxUploadsPerClient, set.MinBodyRate = "8g", "512m", "0", "1m/s"
	if st, err = set.Parse(512<<20, host); err != nil || st.MaxSpoolBytes != 8<<30 || st.MaxBodyInFlightBytes != 512<<20 ||
		st.MaxUploadsPerClient != 0 || st.MinBodyRateBytes != 1<<20 {
		t.Errorf("explicit values: %+v %v", st, err)
	}
	bad := sc
	bad.MaxSpool, bad.MaxBodyInFlight, bad.MaxUploadsPerClient = "100m", "1m", "-1"
	_, err = bad.Parse(512<<20, host)
	for _, want := range []string{"max-spool 100MiB is under max-workdir-size 1GiB", "max-body-in-flight 1MiB is under max-body 64MiB", "max-uploads-per-client"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	env["ASTER_MAX_SPOOL"] = "2g"
	if sc, err = Default().ServeSection(func(k string) string { return env[k] }); err != nil || sc.MaxSpool != "2g" {
		t.Errorf("ASTER_MAX_SPOOL: %q %v", sc.MaxSpool, err)
	}
}
