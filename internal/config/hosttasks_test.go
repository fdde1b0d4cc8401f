package config

import (
	"strconv"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

// TestHostTaskBudget: host_tasks is auto (0: the Manager sizes it from the
// host), or a number from MinHostTasks to what the host can hold; anything
// else is refused with a message naming the setting. ASTER_HOST_TASKS sets it.
func TestHostTaskBudget(t *testing.T) {
	limit, err := sandbox.HostTaskLimit()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    string
		want int64
		err  string
	}{
		{"", 0, ""},
		{"auto", 0, ""},
		{" 5000 ", 5000, ""},
		{strconv.Itoa(MinHostTasks), MinHostTasks, ""},
		{strconv.Itoa(MinHostTasks - 1), 0, "at least 64"},
		{"-1", 0, "at least 64"},
		{"lots", 0, `host_tasks "lots"`},
		{strconv.FormatInt(limit+1, 10), 0, "more than this host can hold"},
	} {
		got, err := Config{HostTasks: c.v}.HostTaskBudget()
		if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: %d, %v; want %d, %q", c.v, got, err, c.want, c.err)
		}
	}
	cfg, err := Load(writeConfig(t, "host_tasks: auto\n"), func(k string) string {
		if k == "ASTER_HOST_TASKS" {
			return "900"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := cfg.HostTaskBudget(); n != 900 || err != nil {
		t.Fatalf("ASTER_HOST_TASKS over the file: %d, %v", n, err)
	}
}
