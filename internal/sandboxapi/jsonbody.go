package sandboxapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

// jobOf is the job of a request that carries one, nil otherwise.
func jobOf(spec any) *api.JobRequest {
	switch v := spec.(type) {
	case *api.ExecuteRequest:
		return &v.JobRequest
	case *api.TestRequest:
		return &v.JobRequest
	}
	return nil
}

// readJobJSON decodes a JSON job body into spec (job is its job) with its
// files' contents and stdin spooled to disk as they arrive (jsonExtractor),
// then makes the files a snapshot: checked as the Manager checks files (the
// same errors, in the same order: a file's encoding, stdin's, then names and
// sizes against the request's workspace size) and packed into an unlinked
// temporary file as PackFiles packs them. The disk it takes is reserved in
// the spool budget as it is written. It returns nil when the body has
// neither files nor stdin; otherwise job's Files and Stdin are cleared and
// the Snapshot holds them.
func readJobJSON(body *recordingReader, spec any, job *api.JobRequest, o BodyOptions) (_ *Snapshot, err error) {
	space, err := o.Spool.Reserve(0)
	if err != nil {
		return nil, err
	}
	x := newJSONExtractor(body, o.TempDir, space.Grow)
	defer func() {
		x.close()
		if err != nil {
			space.Release()
		}
	}()
	if err := decodeSpecAt(x, spec, x.offset); err != nil {
		if rerr := body.firstErr(); rerr != nil {
			return nil, body.classify(rerr)
		}
		if x.failed != nil {
			return nil, spoolError(x.failed)
		}
		return nil, err
	}
	if err := x.flush(); err != nil {
		return nil, spoolError(err)
	}
	if len(job.Files) == 0 && (x.stdin == nil || x.stdin.n == 0) {
		space.Release()
		return nil, nil
	}
	snap := &Snapshot{space: space}
	defer func() {
		if err != nil {
			snap.stdin.Close()
			snap.Spooled.Close()
		}
	}()
	var files map[string]workspace.FileSource
	var limit snapshotLimit
	if len(job.Files) > 0 {
		if limit, err = o.snapshotLimit(spec); err != nil {
			return nil, err
		}
		if files, err = x.fileSources(job.Files); err != nil {
			return nil, err
		}
	}
	// Stdin of "" is left to jobSpec: with no encoding it is no stdin.
	if x.stdin != nil && x.stdin.n > 0 && job.Stdin == "" {
		if snap.stdin, err = x.takeStdin(job.StdinEncoding); err != nil {
			return nil, err
		}
		job.Stdin, job.StdinEncoding = "", ""
	}
	if snap.stdin == nil && job.Stdin == "" && job.StdinEncoding != "" {
		// jobSpec's check of an empty stdin, made here to keep its order.
		if _, err := api.DecodeText("", job.StdinEncoding); err != nil {
			return nil, sandbox.Invalidf("stdin: %v", err)
		}
	}
	if len(job.Files) > 0 {
		sp, err := workspace.SpoolFiles(files, workspace.SpoolOptions{Dir: o.TempDir, Caps: workspace.Caps{MaxBytes: limit.bytes},
			Hook: o.spoolHook, Grow: space.Grow})
		if err != nil {
			if errors.Is(err, sandbox.ErrBusy) || errors.Is(err, sandbox.ErrTooLarge) {
				return nil, err // the spool budget's
			}
			return nil, sandbox.WorkspaceError("workspace", err, sandbox.ErrInvalidSpec)
		}
		snap.Spooled = sp
		job.Files = nil
	}
	x.contents.Close()
	x.contents = nil
	var size int64
	if snap.Spooled != nil {
		size = snap.Size()
	}
	space.ShrinkTo(size + snap.stdin.size())
	return snap, nil
}

// spoolError classes an error of spooling a body's contents: the spool
// budget's and the size cap's are classed already.
func spoolError(err error) error {
	if errors.Is(err, sandbox.ErrBusy) || errors.Is(err, sandbox.ErrTooLarge) {
		return err
	}
	return fmt.Errorf("spool a JSON body: %w", err)
}

// fileSources checks the files' contents as jobSpec did (each encoding, in
// sorted order, with its error) and returns where each is read from: its
// extracted region (base64 decoded as it is read), or the content the
// request holds when it was not extracted (an entry without one).
func (x *jsonExtractor) fileSources(files map[string]api.File) (map[string]workspace.FileSource, error) {
	out := make(map[string]workspace.FileSource, len(files))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := files[name]
		r := x.files[name]
		if r == nil || f.Content != "" {
			b, err := f.Bytes()
			if err != nil {
				return nil, sandbox.Invalidf("files[%s]: %v", workspace.Quote(name), err)
			}
			out[name] = workspace.BytesSource(b)
			continue
		}
		src, err := regionSource(x.contents, *r, f.Encoding)
		if err != nil {
			return nil, sandbox.Invalidf("files[%s]: %v", workspace.Quote(name), err)
		}
		out[name] = src
	}
	return out, nil
}

// regionSource is the FileSource of text spooled in a region, in encoding
// ("", utf-8 or base64), checked as api.DecodeText would check it.
func regionSource(sc *scratch, r region, encoding string) (workspace.FileSource, error) {
	if _, err := api.DecodeText("", encoding); err != nil {
		return workspace.FileSource{}, err
	}
	if encoding != api.EncodingBase64 {
		return workspace.FileSource{Size: r.n, Script: string(sc.head(r)) == "#!",
			Open: func() (io.Reader, error) { return sc.section(r), nil }}, nil
	}
	c, err := checkBase64(sc.section(r))
	if err != nil {
		return workspace.FileSource{}, err
	}
	return workspace.FileSource{Size: c.n, Script: c.n >= 2 && string(c.head[:]) == "#!",
		Open: func() (io.Reader, error) { return base64.NewDecoder(base64.StdEncoding, sc.section(r)), nil }}, nil
}

// takeStdin checks spooled stdin as jobSpec did and hands its file over.
func (x *jsonExtractor) takeStdin(encoding string) (*spooledStdin, error) {
	if _, err := api.DecodeText("", encoding); err != nil {
		return nil, sandbox.Invalidf("stdin: %v", err)
	}
	r := *x.stdin
	if encoding == api.EncodingBase64 {
		if _, err := checkBase64(x.stdinSc.section(r)); err != nil {
			return nil, sandbox.Invalidf("stdin: %v", err)
		}
	}
	in := &spooledStdin{sc: x.stdinSc, r: r, base64: encoding == api.EncodingBase64}
	x.stdinSc = nil
	return in, nil
}

// spooledStdin is a JSON body's stdin in its scratch file.
type spooledStdin struct {
	sc     *scratch
	r      region
	base64 bool
}

// Reader returns the decoded stdin from its start.
func (s *spooledStdin) Reader() io.Reader {
	if s.base64 {
		return base64.NewDecoder(base64.StdEncoding, s.sc.section(s.r))
	}
	return s.sc.section(s.r)
}

func (s *spooledStdin) size() int64 {
	if s == nil {
		return 0
	}
	return s.sc.n
}

// Close releases the file; nil is closed already.
func (s *spooledStdin) Close() error {
	if s == nil {
		return nil
	}
	return s.sc.Close()
}
