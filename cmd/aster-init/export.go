package main

import (
	"encoding/json"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/workspace"
)

// exportWork sends /work to the host as a tar stream (export frames), then an
// export end frame. It runs after every process of the job is gone, so the
// tree no longer changes. Only a command that exited on its own is exported
// (whatever its exit code): after a timeout, an OOM kill, the output ceiling or
// a signal the tree is whatever the job left half-done, and the next phase
// must not build on it.
func (a *agent) exportWork(job initproto.JobHeader, res initproto.ResultFrame) {
	end := initproto.ExportEnd{}
	switch {
	case res.SetupError != "" && res.ExitCode < 0:
		end.Error = "not exported: the command did not start"
	case res.TimedOut:
		end.Error = "not exported: the command timed out"
	case res.OOMKills > 0:
		end.Error = "not exported: a process of the job ran out of memory"
	case res.OutputLimit != "":
		end.Error = "not exported: the job passed the output ceiling"
	case res.Signal != 0:
		end.Error = "not exported: the command was ended by a signal"
	case a.hostGone.Load():
		return
	default:
		w := initproto.NewChunkBuffer(a.out, initproto.TypeExport, 256<<10)
		st, skipped, err := workspace.PackDir(a.workDir, w, workspace.Caps{MaxBytes: job.WorkspaceMaxBytes, MaxFiles: job.WorkspaceMaxFiles})
		if err == nil {
			err = w.Flush()
		}
		end.Files, end.Bytes, end.Skipped = st.Files, st.Bytes, len(skipped)
		if err != nil {
			end.Error = err.Error()
		}
	}
	p, _ := json.Marshal(end)
	_ = a.out.WriteFrame(initproto.TypeExportEnd, p)
}
