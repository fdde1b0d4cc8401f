package config

import (
	"strings"
	"testing"
	"time"
)

func TestPoolSection(t *testing.T) {
	file := writeConfig(t, "pool:\n  warm: 3\n  max_idle: 2m\n  refill_per_second: 5\n")
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	c, err := Load(file, getenv)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.PoolSection(getenv)
	if err != nil {
		t.Fatal(err)
	}
	po, err := pc.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if po.Warm != 3 || po.MaxIdle != 2*time.Minute || po.RefillPerSecond != 5 || po.ShrinkAfter != DefaultPoolShrinkAfter {
		t.Fatalf("pool options %+v", po)
	}
	env["ASTER_WARM"] = "7"
	pc, _ = c.PoolSection(getenv)
	if po, _ := pc.Parse(); po.Warm != 7 {
		t.Fatalf("ASTER_WARM ignored: %+v", po)
	}
	for _, bad := range []PoolConfig{{Warm: "-1"}, {Warm: "x"}, {Warm: "100000"}, {MaxIdle: "10ms"}, {RefillPerSecond: "0"}} {
		if _, err := bad.Parse(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestOCISection(t *testing.T) {
	file := writeConfig(t, "oci:\n  runtime: runc\n  cache_dir: /srv/aster\n")
	env := map[string]string{"ASTER_OCI_STATE_DIR": "/run/x"}
	c, err := Load(file, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.OCI.Runtime != "runc" || c.OCI.CacheDir != "/srv/aster" || c.OCI.StateDir != "/run/x" {
		t.Fatalf("oci section %+v", c.OCI)
	}
	d := Default().OCI
	if d.Runtime != DefaultOCIRuntime || d.CacheDir != DefaultOCICacheDir || (d.StateDir != DefaultOCIStateDir && d.StateDir != FallbackOCIStateDir) {
		t.Fatalf("defaults %+v", d)
	}
}

func TestGVisorSection(t *testing.T) {
	file := writeConfig(t, "runtime: gvisor\ngvisor:\n  runsc: /opt/gvisor/runsc\n  platform: ptrace\n")
	env := map[string]string{}
	c, err := Load(file, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Runtime != "gvisor" || c.GVisor.Runsc != "/opt/gvisor/runsc" || c.GVisor.Platform != "ptrace" {
		t.Fatalf("gvisor section %+v", c.GVisor)
	}
	env["ASTER_GVISOR_PLATFORM"] = "systrap"
	if c, err = Load(file, func(k string) string { return env[k] }); err != nil || c.GVisor.Platform != "systrap" {
		t.Fatalf("the variable does not win over the file: %+v %v", c.GVisor, err)
	}
	env["ASTER_GVISOR_PLATFORM"] = "vmware"
	if _, err := Load(file, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "ASTER_GVISOR_PLATFORM") {
		t.Fatalf("an unknown platform: %v", err)
	}
	if d := Default().GVisor; d.Runsc != "runsc" || d.Platform != "" {
		t.Fatalf("defaults %+v", d)
	}
}
