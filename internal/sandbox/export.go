package sandbox

import "time"

// ExportTimeout bounds the export of /work once the command has exited; the
// host's deadline is moved to it when the first export frame arrives.
const ExportTimeout = 2 * time.Minute

// ExportReport says what became of a Spec.Export.
type ExportReport struct {
	// Files and Bytes are the entries and file bytes written to Export.
	Files int64
	Bytes int64
	// Skipped counts entries of /work left out (sockets, devices, FIFOs).
	Skipped int
	// Error says why the export is missing or incomplete; what Export
	// received must then be discarded.
	Error string
}
