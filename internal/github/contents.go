package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v81/github"

	"github.com/asterhq/aster/internal/safetext"
)

// TarballOptions selects the snapshot to download.
type TarballOptions struct {
	Ref      string // a commit SHA (preferred: immutable) or a branch
	MaxBytes int64  // 0 means DefaultMaxTarballBytes
}

// Tarball describes a finished download.
type Tarball struct {
	Bytes int64
}

// DownloadTarball streams the gzip tarball of opts.Ref into w. GitHub answers with a redirect
// to a short-lived link; that link carries its own token, so it is fetched without ours and is
// never logged. More than MaxBytes is an ErrTooLarge. A failure after bytes reached w is not
// retried (w cannot be rewound).
func (c *Client) DownloadTarball(ctx context.Context, w io.Writer, opts TarballOptions) (Tarball, error) {
	if opts.Ref == "" {
		return Tarball{}, &APIError{Op: "download tarball", class: ErrInvalid, Message: "empty ref"}
	}
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTarballBytes
	}
	var link string
	err := c.retry.do(ctx, "get tarball link", func(ctx context.Context) (*gh.Response, error) {
		u, resp, err := c.api.Repositories.GetArchiveLink(ctx, c.owner, c.repo, gh.Tarball,
			&gh.RepositoryContentGetOptions{Ref: opts.Ref}, 3)
		if err == nil {
			link = u.String()
		}
		return resp, err
	})
	if err != nil {
		return Tarball{}, err
	}

	cw := &countingWriter{w: w}
	tooLarge := false
	err = c.retry.do(ctx, "download tarball", func(ctx context.Context) (*gh.Response, error) {
		if cw.n > 0 {
			return nil, errors.New("download interrupted after data was written")
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
		if err != nil {
			return nil, errors.New("bad archive link")
		}
		resp, err := c.download.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if err := gh.CheckResponse(resp); err != nil {
			return &gh.Response{Response: resp}, err
		}
		n, err := io.Copy(cw, io.LimitReader(resp.Body, maxBytes+1))
		if err != nil {
			return nil, fmt.Errorf("read archive: %s", safetext.RedactShapes(err.Error()))
		}
		if n > maxBytes {
			tooLarge = true
			return nil, errors.New("archive too large")
		}
		return nil, nil
	})
	if tooLarge {
		return Tarball{Bytes: cw.n}, &APIError{Op: "download tarball", class: ErrTooLarge,
			Message: fmt.Sprintf("archive larger than %d bytes", maxBytes)}
	}
	return Tarball{Bytes: cw.n}, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// FileOptions selects one file at one revision.
type FileOptions struct {
	Path     string
	Ref      string // commit SHA or branch; use the base revision for configuration
	MaxBytes int64  // 0 means DefaultMaxFileBytes
}

// File is a file's content at a revision. Absent is true (and the error nil) when GitHub
// answered 404: no such file at that ref.
type File struct {
	Path    string
	Ref     string
	SHA     string // blob SHA
	Content []byte
	Absent  bool
}

// GetFile reads one regular file at a ref through the contents API.
func (c *Client) GetFile(ctx context.Context, opts FileOptions) (File, error) {
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFileBytes
	}
	out := File{Path: opts.Path, Ref: opts.Ref}
	path := strings.TrimPrefix(opts.Path, "/")
	if path == "" || strings.Contains(path, "..") {
		return out, &APIError{Op: "get file", class: ErrInvalid, Message: "bad path"}
	}
	var fc *gh.RepositoryContent
	var dir []*gh.RepositoryContent
	err := c.retry.do(ctx, "get file", func(ctx context.Context) (resp *gh.Response, err error) {
		fc, dir, resp, err = c.api.Repositories.GetContents(ctx, c.owner, c.repo, path,
			&gh.RepositoryContentGetOptions{Ref: opts.Ref})
		return resp, err
	})
	switch {
	case errors.Is(err, ErrNotFound):
		out.Absent = true
		return out, nil
	case err != nil:
		return out, err
	case fc == nil || dir != nil || fc.GetType() != "file":
		return out, &APIError{Op: "get file", class: ErrInvalid, Message: "not a regular file"}
	case int64(fc.GetSize()) > maxBytes:
		return out, &APIError{Op: "get file", class: ErrTooLarge,
			Message: fmt.Sprintf("%d bytes, cap %d", fc.GetSize(), maxBytes)}
	}
	content, err := fc.GetContent()
	if err != nil {
		return out, &APIError{Op: "get file", class: ErrInvalid, Message: "undecodable content"}
	}
	if int64(len(content)) > maxBytes {
		return out, &APIError{Op: "get file", class: ErrTooLarge, Message: fmt.Sprintf("cap %d bytes", maxBytes)}
	}
	out.SHA, out.Content = fc.GetSHA(), []byte(content)
	return out, nil
}
