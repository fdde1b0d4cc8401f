package config

import (
	"strings"
	"testing"
	"time"
)

func TestSessionsConfigParse(t *testing.T) {
	got, err := SessionsConfig{}.Parse(8)
	if err != nil || got.Max != 4 || got.PerToken != 0 || got.Options.DefaultTTL != 0 {
		t.Fatalf("defaults: %+v %v", got, err)
	}
	if got, _ := (SessionsConfig{}).Parse(1); got.Max != 1 {
		t.Fatalf("one slot: max %d, want 1", got.Max)
	}
	got, err = SessionsConfig{TTL: "1h", MaxTTL: "2h", IdleTimeout: "5m", MaxIdleTimeout: "30m", MaxExecs: "3",
		Max: "10", MaxPerToken: "2", SnapshotDir: " /var/lib/aster/snaps ", MaxSnapshots: "512m"}.Parse(8)
	if err != nil {
		t.Fatal(err)
	}
	o := got.Options
	if o.DefaultTTL != time.Hour || o.MaxTTL != 2*time.Hour || o.DefaultIdle != 5*time.Minute || o.MaxIdle != 30*time.Minute ||
		o.MaxExecs != 3 || got.Max != 10 || got.PerToken != 2 || got.SnapshotDir != "/var/lib/aster/snaps" || got.MaxSnapshotBytes != 512<<20 {
		t.Fatalf("parsed: %+v", got)
	}
	for _, c := range []struct {
		in   SessionsConfig
		want string
	}{
		{SessionsConfig{TTL: "soon"}, "sessions.ttl"},
		{SessionsConfig{Max: "0"}, "sessions.max"},
		{SessionsConfig{MaxPerToken: "-1"}, "sessions.max_per_token"},
		{SessionsConfig{MaxSnapshots: "10k"}, "sessions.max_snapshots"},
		{SessionsConfig{TTL: "3h", MaxTTL: "1h"}, "above sessions.max_ttl"},
		{SessionsConfig{IdleTimeout: "1h", MaxIdleTimeout: "1m"}, "above sessions.max_idle_timeout"},
	} {
		if _, err := c.in.Parse(8); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.in, err, c.want)
		}
	}
}
