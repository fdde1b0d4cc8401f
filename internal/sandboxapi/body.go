package sandboxapi

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

// maxSpecBytes bounds the JSON spec of a tar or multipart request.
const maxSpecBytes = 1 << 20

// BodyOptions bound how a request body is read.
type BodyOptions struct {
	// MaxBodyBytes caps the whole body; a larger Content-Length is refused
	// before anything is read, and a body that turns out larger is cut off.
	MaxBodyBytes int64
	// WorkspaceMaxBytes caps the files of a snapshot.
	WorkspaceMaxBytes int64
	// ReadTimeout bounds reading the whole body, against slow clients.
	ReadTimeout time.Duration
	// TempDir is where snapshots are spooled ("" is os.TempDir()).
	TempDir string
}

// Snapshot is a validated repository snapshot: a normalised tar in an
// unlinked temporary file, so nothing is left on disk whatever happens.
type Snapshot struct {
	file  *os.File
	size  int64
	Stats workspace.Stats
}

// Reader returns a fresh reader over the normalised archive.
func (s *Snapshot) Reader() io.Reader { return io.NewSectionReader(s.file, 0, s.size) }

// Names lists the archive's entry names (at most max).
func (s *Snapshot) Names(max int) ([]string, error) {
	tr := tar.NewReader(s.Reader())
	var names []string
	for len(names) < max {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return names, err
		}
		names = append(names, h.Name)
	}
	return names, nil
}

// Close releases the file.
func (s *Snapshot) Close() error {
	if s == nil || s.file == nil {
		return nil
	}
	return s.file.Close()
}

// ReadBody reads a request: JSON (Content-Type application/json) into spec; or a repository snapshot as a binary tar — Content-Type
// application/x-tar with the JSON spec in the X-Aster-Spec header, or
// multipart/form-data with a "spec" field and a "workspace" file. The
// snapshot is validated (workspace.Filter) while it is spooled, so a hostile
// or oversized archive is refused before anything starts. The caller closes
// the Snapshot (nil for JSON requests).
func ReadBody(w http.ResponseWriter, r *http.Request, spec any, o BodyOptions) (*Snapshot, error) {
	if o.MaxBodyBytes > 0 && r.ContentLength > o.MaxBodyBytes {
		return nil, fmt.Errorf("%w: request body of %s is over this server's limit of %s (--max-body)",
			sandbox.ErrTooLarge, config.FormatBytes(r.ContentLength), config.FormatBytes(o.MaxBodyBytes))
	}
	rc := http.NewResponseController(w)
	if o.ReadTimeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(o.ReadTimeout))
		// The deadline is for the body only: once read, a long run must not
		// be cut off by it.
		defer rc.SetReadDeadline(time.Time{})
	}
	body := &recordingReader{r: r.Body}
	if o.MaxBodyBytes > 0 {
		body.r = http.MaxBytesReader(w, r.Body, o.MaxBodyBytes)
	}
	ct := r.Header.Get("Content-Type")
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, fmt.Errorf("%w: Content-Type %q: %v", ErrMediaType, ct, err)
	}
	var snap *Snapshot
	switch media {
	case ContentTypeJSON:
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, body.classify(err)
		}
		if err := decodeSpec(data, spec); err != nil {
			return nil, err
		}
	case ContentTypeTar:
		if h := r.Header.Get(HeaderSpec); h != "" {
			if err := decodeSpec([]byte(h), spec); err != nil {
				return nil, fmt.Errorf("%s header: %w", HeaderSpec, err)
			}
		}
		if snap, err = spool(body, o); err != nil {
			return nil, err
		}
	case "multipart/form-data":
		if snap, err = readMultipart(body, params["boundary"], spec, o); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %q (send application/json, application/x-tar with an %s header, or multipart/form-data)", ErrMediaType, media, HeaderSpec)
	}
	// Read to the end: past the archive's trailer there may be padding, and
	// only a body read to EOF lets the server notice a client that goes away.
	if _, err := io.Copy(io.Discard, body); err != nil {
		snap.Close()
		return nil, body.classify(err)
	}
	return snap, nil
}

func readMultipart(body *recordingReader, boundary string, spec any, o BodyOptions) (*Snapshot, error) {
	if boundary == "" {
		return nil, sandbox.Invalidf("multipart body without a boundary")
	}
	mr := multipart.NewReader(body, boundary)
	var snap *Snapshot
	fail := func(err error) (*Snapshot, error) {
		snap.Close()
		return nil, err
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(body.classify(err))
		}
		switch part.FormName() {
		case PartSpec:
			data, err := io.ReadAll(io.LimitReader(part, maxSpecBytes+1))
			if err != nil {
				return fail(body.classify(err))
			}
			if len(data) > maxSpecBytes {
				return fail(fmt.Errorf("%w: the spec part is over %s", sandbox.ErrTooLarge, config.FormatBytes(maxSpecBytes)))
			}
			if err := decodeSpec(data, spec); err != nil {
				return fail(fmt.Errorf("spec part: %w", err))
			}
		case PartWorkspace:
			if snap != nil {
				return fail(sandbox.Invalidf("more than one workspace part"))
			}
			if snap, err = spool(&recordingReader{r: part, parent: body}, o); err != nil {
				return fail(err)
			}
		default:
			return fail(sandbox.Invalidf("unknown multipart field %q (want %q and %q)", part.FormName(), PartSpec, PartWorkspace))
		}
	}
	return snap, nil
}

// spool validates a tar stream into an unlinked temporary file.
func spool(r *recordingReader, o BodyOptions) (*Snapshot, error) {
	f, err := os.CreateTemp(o.TempDir, "aster-snapshot-*.tar")
	if err != nil {
		return nil, fmt.Errorf("spool snapshot: %w", err)
	}
	// Unlinked at once: the open file is all there is, and a crash leaves nothing.
	_ = os.Remove(f.Name())
	st, err := workspace.Filter(r, f, workspace.Caps{MaxBytes: o.WorkspaceMaxBytes})
	if err != nil {
		f.Close()
		if rerr := r.firstErr(); rerr != nil {
			return nil, r.classify(rerr)
		}
		switch {
		case errors.Is(err, workspace.ErrTooLarge):
			return nil, fmt.Errorf("%w: snapshot: %w", sandbox.ErrTooLarge, err)
		case errors.Is(err, workspace.ErrUnsafe):
			return nil, fmt.Errorf("%w: snapshot: %w", sandbox.ErrInvalidSpec, err)
		}
		return nil, fmt.Errorf("spool snapshot: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("spool snapshot: %w", err)
	}
	return &Snapshot{file: f, size: size, Stats: st}, nil
}

// decodeSpec decodes one JSON object, refusing unknown fields and trailing data.
func decodeSpec(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return sandbox.Invalidf("empty JSON body")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return sandbox.Invalidf("malformed JSON: it ends before the object does")
		case errors.As(err, &se):
			return sandbox.Invalidf("malformed JSON at byte %d: %v", se.Offset, err)
		case errors.As(err, &te):
			return sandbox.Invalidf("field %q: a JSON %s is not valid here", te.Field, te.Value)
		}
		return sandbox.Invalidf("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return sandbox.Invalidf("trailing data after the JSON object")
	}
	return nil
}

// recordingReader remembers the first read error of the body, so a failure
// deep inside the tar or multipart reader is still classified by its cause
// (too large, too slow) rather than as a malformed archive.
type recordingReader struct {
	r      io.Reader
	err    error
	parent *recordingReader
}

func (b *recordingReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *recordingReader) firstErr() error {
	if b.err != nil {
		return b.err
	}
	if b.parent != nil {
		return b.parent.firstErr()
	}
	return nil
}

// classify turns a body read error into an error class.
func (b *recordingReader) classify(err error) error {
	if first := b.firstErr(); first != nil {
		err = first
	}
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return fmt.Errorf("%w: request body is over this server's limit of %s (--max-body)", sandbox.ErrTooLarge, config.FormatBytes(mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: the request body was not received in time", ErrRequestTimeout)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return sandbox.Invalidf("request body ended early")
	}
	return sandbox.Invalidf("reading the request body: %v", err)
}
