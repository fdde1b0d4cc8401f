package runtimekit

import (
	"errors"
	"fmt"
	"io"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

// exportOverheadPerEntry bounds the tar framing of one entry (header, a PAX
// record for a long name, padding) on top of its data.
const exportOverheadPerEntry = 3 << 10

// exportSink receives init's export frames and writes them to the caller's
// Export through workspace.Filter: the stream comes from the sandbox, so it is
// checked like an upload (names, links, types, sizes) and capped in raw bytes
// too, so that endless framing cannot keep the host busy.
type exportSink struct {
	pw     *io.PipeWriter
	result chan filterResult
	raw    int64
	maxRaw int64
	err    error // the host's own reason to stop; the rest is then discarded
	// stopped says the filter refused the archive (its error says why).
	stopped bool
	end     *initproto.ExportEnd
}

type filterResult struct {
	st  workspace.Stats
	err error
}

func newExportSink(w io.Writer, limits sandbox.Limits) *exportSink {
	pr, pw := io.Pipe()
	s := &exportSink{pw: pw, result: make(chan filterResult, 1),
		maxRaw: limits.WorkdirBytes + workspace.DefaultMaxFiles*exportOverheadPerEntry}
	caps := workspace.Caps{MaxBytes: limits.WorkdirBytes, MaxFiles: workspace.DefaultMaxFiles}
	go func() {
		st, err := workspace.Filter(pr, w, caps)
		if err == nil {
			// Trailing bytes after the archive's end (tar's zero blocks, or
			// more) are drained, within the raw cap that data() applies.
			_, err = io.Copy(io.Discard, pr)
		}
		pr.CloseWithError(errors.New("export refused"))
		s.result <- filterResult{st, err}
	}()
	return s
}

func (s *exportSink) data(p []byte) {
	if s.err != nil || s.stopped || s.end != nil {
		return
	}
	s.raw += int64(len(p))
	if s.raw > s.maxRaw {
		s.fail(fmt.Errorf("%w: the export passed %d bytes of archive", workspace.ErrTooLarge, s.maxRaw))
		return
	}
	if _, err := s.pw.Write(p); err != nil {
		s.stopped = true
	}
}

func (s *exportSink) fail(err error) {
	if s.err == nil {
		s.err = err
		s.pw.CloseWithError(err)
	}
}

func (s *exportSink) ended(p []byte) error {
	if s.end != nil {
		return errors.New("second export end frame")
	}
	e, err := initproto.DecodeExportEnd(p)
	if err != nil {
		return err
	}
	s.end = &e
	return nil
}

// finish ends the stream and reports. It waits for the filter, which has its
// input closed by then.
func (s *exportSink) finish() sandbox.ExportReport {
	switch {
	case s.stopped:
		s.pw.Close()
	case s.end == nil:
		s.fail(errors.New("the sandbox ended before the export was complete"))
	case s.end.Error != "":
		s.fail(errors.New(s.end.Error))
	default:
		s.pw.Close()
	}
	r := <-s.result
	rep := sandbox.ExportReport{Files: r.st.Files, Bytes: r.st.Bytes}
	if s.end != nil {
		rep.Skipped = s.end.Skipped
	}
	switch {
	case (s.stopped || s.err == nil) && r.err != nil:
		rep.Error = r.err.Error()
	case s.err != nil:
		rep.Error = s.err.Error()
	}
	if rep.Error != "" {
		rep.Files, rep.Bytes = 0, 0
	}
	return rep
}
