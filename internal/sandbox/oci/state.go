package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// record is what the state directory keeps about one sandbox, next to its
// bundle: enough for the reaper of a later process to find and remove it.
type record struct {
	ID       string    `json:"id"`
	RunID    string    `json:"run_id"`
	Deadline time.Time `json:"deadline"`
	Created  time.Time `json:"created"`
	Runtime  string    `json:"runtime"` // the OCI runtime binary
}

const (
	recordFile = "aster.json"
	configFile = "config.json"
	pidFile    = "init.pid"
)

// validID is what the runtime accepts as a container id, and what is safe as
// a directory name.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func (r *Runtime) runDir(id string) string { return filepath.Join(r.runsDir, id) }

func writeRecord(dir string, rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, recordFile), b, 0o600)
}

// records lists the sandboxes of every Aster process sharing the state dir.
func (r *Runtime) records() ([]record, error) {
	entries, err := os.ReadDir(r.runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make([]record, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() || !validID.MatchString(e.Name()) {
			continue
		}
		rec := record{ID: e.Name()}
		b, err := os.ReadFile(filepath.Join(r.runsDir, e.Name(), recordFile))
		if err == nil {
			_ = json.Unmarshal(b, &rec)
			rec.ID = e.Name()
		}
		if rec.Created.IsZero() {
			if info, err := e.Info(); err == nil {
				rec.Created = info.ModTime()
			}
		}
		out = append(out, rec)
	}
	return out, nil
}
