package sandboxapi

import (
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
	"strings"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
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
	// SnapshotLimit, when set, gives the workspace size a decoded spec asks
	// for (its limits.workdir_size, or the default), checked against the
	// ceilings. A snapshot is then spooled up to that size only, and a
	// multipart body must send its spec part before its workspace part.
	// Without it the bound is WorkspaceMaxBytes.
	SnapshotLimit func(spec any) (int64, error)
	// Spool, when set, is the disk shared by every snapshot spooled or held
	// at once: a snapshot reserves its limit there before its first byte is
	// written, keeps its size until it is closed, and is refused with 429
	// (413 if it could never fit) when the space is taken.
	Spool *Budget

	// spoolHook, in tests, sees the spool file after every write.
	spoolHook func(*os.File)
}

// Snapshot is a validated repository snapshot: a normalised tar in an
// unlinked temporary file (workspace.Spool), so nothing is left on disk
// whatever happens, and its share of BodyOptions.Spool. A JSON body's
// files become one too (readJobJSON), and its stdin is kept beside them;
// Spooled is then nil when the body had stdin but no files.
type Snapshot struct {
	*workspace.Spooled
	space *Reservation
	stdin *spooledStdin
}

// archive says whether the snapshot holds files (a nil one holds none).
func (s *Snapshot) archive() bool { return s != nil && s.Spooled != nil }

// Stdin returns the reader of a JSON body's spooled stdin, or nil.
func (s *Snapshot) Stdin() io.Reader {
	if s == nil || s.stdin == nil {
		return nil
	}
	return s.stdin.Reader()
}

// Close releases the files and their share of the spool.
func (s *Snapshot) Close() error {
	if s == nil {
		return nil
	}
	defer s.space.Release()
	err := s.stdin.Close()
	if s.Spooled != nil {
		err = errors.Join(s.Spooled.Close(), err)
	}
	return err
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
			sandbox.ErrTooLarge, units.FormatBytes(r.ContentLength), units.FormatBytes(o.MaxBodyBytes))
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
		return nil, fmt.Errorf("%w: Content-Type %q: %v", api.ErrMediaType, ct, err)
	}
	var snap *Snapshot
	switch media {
	case api.ContentTypeJSON:
		if job := jobOf(spec); job != nil {
			// Files and stdin go to disk as they arrive.
			if snap, err = readJobJSON(body, spec, job, o); err != nil {
				return nil, err
			}
			break
		}
		if err := decodeSpec(body, spec); err != nil {
			if rerr := body.firstErr(); rerr != nil {
				return nil, body.classify(rerr)
			}
			return nil, err
		}
	case api.ContentTypeTar:
		if h := r.Header.Get(api.HeaderSpec); h != "" {
			if err := decodeSpec(strings.NewReader(h), spec); err != nil {
				return nil, fmt.Errorf("%s header: %w", api.HeaderSpec, err)
			}
		}
		limit, err := o.snapshotLimit(spec)
		if err != nil {
			return nil, err
		}
		if snap, err = spool(body, o, limit); err != nil {
			return nil, err
		}
	case "multipart/form-data":
		if snap, err = readMultipart(body, params["boundary"], spec, o); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %q (send application/json, application/x-tar with an %s header, or multipart/form-data)", api.ErrMediaType, media, api.HeaderSpec)
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
	haveSpec := false
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
		case api.PartSpec:
			data, err := io.ReadAll(io.LimitReader(part, maxSpecBytes+1))
			if err != nil {
				return fail(body.classify(err))
			}
			if len(data) > maxSpecBytes {
				return fail(fmt.Errorf("%w: the spec part is over %s", sandbox.ErrTooLarge, units.FormatBytes(maxSpecBytes)))
			}
			if err := decodeSpec(bytes.NewReader(data), spec); err != nil {
				return fail(fmt.Errorf("spec part: %w", err))
			}
			haveSpec = true
		case api.PartWorkspace:
			if snap != nil {
				return fail(sandbox.Invalidf("more than one workspace part"))
			}
			if !haveSpec && o.SnapshotLimit != nil {
				// The spec says how large the workspace may be; the archive
				// is only read once that is known.
				return fail(sandbox.Invalidf("the %q part must come before the %q part: its limits.workdir_size bounds the snapshot", api.PartSpec, api.PartWorkspace))
			}
			limit, err := o.snapshotLimit(spec)
			if err != nil {
				return fail(err)
			}
			if snap, err = spool(&recordingReader{r: part, parent: body}, o, limit); err != nil {
				return fail(err)
			}
		default:
			return fail(sandbox.Invalidf("unknown multipart field %q (want %q and %q)", part.FormName(), api.PartSpec, api.PartWorkspace))
		}
	}
	return snap, nil
}

// snapshotLimit is the most a snapshot for spec may hold.
func (o BodyOptions) snapshotLimit(spec any) (snapshotLimit, error) {
	if o.SnapshotLimit == nil {
		return snapshotLimit{o.WorkspaceMaxBytes, "this server's --max-workdir-size"}, nil
	}
	n, err := o.SnapshotLimit(spec)
	if err != nil {
		return snapshotLimit{}, err
	}
	if o.WorkspaceMaxBytes > 0 && (n <= 0 || n > o.WorkspaceMaxBytes) {
		n = o.WorkspaceMaxBytes
	}
	return snapshotLimit{n, "the request's workspace size (limits.workdir_size)"}, nil
}

// snapshotLimit is a snapshot's size bound and what it is called.
type snapshotLimit struct {
	bytes int64
	name  string
}

// spool validates a tar stream into an unlinked temporary file of at most
// limit bytes: the normalised archive, headers included, counts against the
// workspace size, so the file never grows past what the request may use.
func spool(r *recordingReader, o BodyOptions, limit snapshotLimit) (*Snapshot, error) {
	space, err := o.Spool.Reserve(limit.bytes)
	if err != nil {
		return nil, fmt.Errorf("snapshot of up to %s: %w", units.FormatBytes(limit.bytes), err)
	}
	sp, err := workspace.Spool(r, workspace.SpoolOptions{Dir: o.TempDir, Caps: workspace.Caps{MaxBytes: limit.bytes},
		MaxArchiveBytes: limit.bytes, Hook: o.spoolHook})
	if err != nil {
		space.Release()
		if rerr := r.firstErr(); rerr != nil {
			return nil, r.classify(rerr)
		}
		switch {
		case errors.Is(err, workspace.ErrSpoolFull):
			return nil, fmt.Errorf("%w: snapshot: the archive is over %s, %s", sandbox.ErrTooLarge, units.FormatBytes(limit.bytes), limit.name)
		case errors.Is(err, workspace.ErrTooLarge):
			return nil, sandbox.WorkspaceError(fmt.Sprintf("snapshot (at most %s, %s)", units.FormatBytes(limit.bytes), limit.name), err, nil)
		}
		return nil, sandbox.WorkspaceError("snapshot", err, nil)
	}
	space.ShrinkTo(sp.Size())
	return &Snapshot{Spooled: sp, space: space}, nil
}

// decodeSpec decodes one JSON object from r, refusing unknown fields and
// trailing data.
func decodeSpec(r io.Reader, v any) error {
	return decodeSpecAt(r, v, nil)
}

// decodeSpecAt is decodeSpec for a reader whose offsets offset maps to the
// body's (nil: they are the body's).
func decodeSpecAt(r io.Reader, v any, offset func(int64) int64) error {
	dec := json.NewDecoder(r)
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
			at := se.Offset
			if offset != nil {
				at = offset(at)
			}
			return sandbox.Invalidf("malformed JSON at byte %d: %v", at, err)
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
	case errors.Is(err, api.ErrRequestTimeout), errors.Is(err, sandbox.ErrBusy), errors.Is(err, sandbox.ErrTooLarge):
		// Already classed: the pace or the body budget.
		return err
	case errors.As(err, &mbe):
		return fmt.Errorf("%w: request body is over this server's limit of %s (--max-body)", sandbox.ErrTooLarge, units.FormatBytes(mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: the request body was not received in time", api.ErrRequestTimeout)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return sandbox.Invalidf("request body ended early")
	}
	return sandbox.Invalidf("reading the request body: %v", err)
}
