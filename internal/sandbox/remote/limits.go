// Package remote runs sandbox specs on a remote `aster sandbox serve` through
// the public Go client (package client), so a caller that takes a local
// sandbox.Manager can take a remote server instead.
package remote

import (
	"strconv"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// WireLimits turns sandbox.Limits into the API's limits: milliseconds and
// bytes as quantities the server parses back exactly; zero fields are left
// out (the server's defaults apply).
func WireLimits(l sandbox.Limits) api.Limits {
	q := func(v int64, unit string) api.Quantity {
		if v == 0 {
			return ""
		}
		return api.Quantity(strconv.FormatInt(v, 10) + unit)
	}
	var cpus api.Quantity
	if l.MilliCPUs != 0 {
		cpus = api.Quantity(strconv.FormatFloat(float64(l.MilliCPUs)/1000, 'f', -1, 64))
	}
	return api.Limits{
		Timeout:       q(l.TimeoutMS, "ms"),
		Memory:        q(l.MemoryBytes, ""),
		CPUs:          cpus,
		Pids:          q(l.Pids, ""),
		OutputLimit:   q(l.OutputBytes, ""),
		OutputCeiling: q(l.OutputCeilingBytes, ""),
		WorkdirSize:   q(l.WorkdirBytes, ""),
		TmpSize:       q(l.TmpBytes, ""),
	}
}
