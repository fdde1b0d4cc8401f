package units

import (
	"testing"
	"time"
)

func TestParseBytes(t *testing.T) {
	good := map[string]int64{"512m": 512 << 20, "1g": 1 << 30, "64MiB": 64 << 20, "1048576": 1 << 20, "1.5k": 1536, "2 GB": 2 << 30, "10b": 10, "0": 0}
	for in, want := range good {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-5m", "abc", "1q", "NaN", "Inf", "1e30g", "m"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

func TestParseCPUsAndDuration(t *testing.T) {
	if v, err := ParseCPUs("0.5"); err != nil || v != 500 {
		t.Fatalf("0.5 cpus: %d %v", v, err)
	}
	for _, bad := range []string{"0", "-1", "x", "1e9"} {
		if _, err := ParseCPUs(bad); err == nil {
			t.Errorf("ParseCPUs(%q) accepted", bad)
		}
	}
	if d, err := ParseDuration("1500ms"); err != nil || d != 1500*time.Millisecond {
		t.Fatalf("1500ms: %v %v", d, err)
	}
	if d, err := ParseDuration("2"); err != nil || d != 2*time.Second {
		t.Fatalf("bare number is seconds: %v %v", d, err)
	}
	for _, bad := range []string{"-1s", "soon", "-3"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

// TestFormatBytes: exact sizes in the unit that divides them (what ParseBytes
// reads back), others to one decimal, never a bare count of a huge number of
// bytes unless the decimal would hide the difference.
func TestFormatBytes(t *testing.T) {
	for v, want := range map[int64]string{
		0:           "0B",
		-1:          "-1B",
		1023:        "1023B",
		512 << 20:   "512MiB",
		4 << 30:     "4GiB",
		1536:        "1.5KiB",
		99999999999: "93.1GiB",
		16<<30 + 1:  "16.0GiB (17179869185B)",
		3 << 40:     "3TiB",
	} {
		if got := FormatBytes(v); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Second: "30s", time.Minute: "1m", 2 * time.Minute: "2m", 90 * time.Second: "1m30s",
		time.Hour: "1h", 90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s", 0: "0s",
	} {
		got := FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(got); err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, d)
		}
	}
}
