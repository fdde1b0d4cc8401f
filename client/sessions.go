package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/asterhq/aster/api"
)

// Sessions (docs/sessions.md): a sandbox kept across calls.

// CreateSession creates a session and returns it (its ID names it in the
// other calls).
func (c *Client) CreateSession(ctx context.Context, req api.SessionRequest) (api.Session, error) {
	var s api.Session
	err := c.sessionCall(ctx, http.MethodPost, api.RouteSessions, req, http.StatusCreated, &s)
	return s, err
}

// Sessions lists the caller's live sessions.
func (c *Client) Sessions(ctx context.Context) ([]api.Session, error) {
	var l api.SessionList
	err := c.sessionCall(ctx, http.MethodGet, api.RouteSessions, nil, http.StatusOK, &l)
	return l.Sessions, err
}

// Session describes one session.
func (c *Client) Session(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	err := c.sessionCall(ctx, http.MethodGet, sessionPath(id, ""), nil, http.StatusOK, &s)
	return s, err
}

// DeleteSession ends a session with everything in it.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.sessionCall(ctx, http.MethodDelete, sessionPath(id, ""), nil, http.StatusNoContent, nil)
}

// SessionExec runs a command in a session and returns its result (any
// status: a timeout or OOM is a result, not an error).
func (c *Client) SessionExec(ctx context.Context, id string, req api.SessionExecRequest) (api.Result, error) {
	var r api.Result
	err := c.sessionCall(ctx, http.MethodPost, sessionPath(id, "/exec"), req, http.StatusOK, &r)
	return r, err
}

// PutFile writes data to path (relative to /work) in a session.
func (c *Client) PutFile(ctx context.Context, id, path string, data []byte) error {
	return c.sessionRaw(ctx, http.MethodPut, filePath(id, path), bytes.NewReader(data), http.StatusNoContent, nil)
}

// GetFile reads the file at path in a session.
func (c *Client) GetFile(ctx context.Context, id, path string) ([]byte, error) {
	var buf bytes.Buffer
	err := c.sessionRaw(ctx, http.MethodGet, filePath(id, path), nil, http.StatusOK, &buf)
	return buf.Bytes(), err
}

// ListFiles lists the directory at path ("" for /work) in a session.
func (c *Client) ListFiles(ctx context.Context, id, dir string) (api.FileList, error) {
	route := sessionPath(id, "/files")
	if dir = strings.Trim(dir, "/"); dir != "" {
		route = filePath(id, dir) + "/"
	}
	var l api.FileList
	err := c.sessionCall(ctx, http.MethodGet, route, nil, http.StatusOK, &l)
	return l, err
}

// DeleteFile removes the file or directory at path in a session.
func (c *Client) DeleteFile(ctx context.Context, id, path string) error {
	return c.sessionRaw(ctx, http.MethodDelete, filePath(id, path), nil, http.StatusNoContent, nil)
}

// PauseSession freezes a session (no CPU, memory kept); any later call
// resumes it.
func (c *Client) PauseSession(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	err := c.sessionCall(ctx, http.MethodPost, sessionPath(id, "/pause"), nil, http.StatusOK, &s)
	return s, err
}

// ResumeSession thaws a paused session.
func (c *Client) ResumeSession(ctx context.Context, id string) (api.Session, error) {
	var s api.Session
	err := c.sessionCall(ctx, http.MethodPost, sessionPath(id, "/resume"), nil, http.StatusOK, &s)
	return s, err
}

// SetSessionEgress gives a session one of the operator's egress profiles
// that the token may use ("" for none); the previous profile's tunnels
// are closed.
func (c *Client) SetSessionEgress(ctx context.Context, id, profile string) (api.Session, error) {
	var s api.Session
	err := c.sessionCall(ctx, http.MethodPut, sessionPath(id, "/egress"), api.SessionEgressRequest{Profile: profile}, http.StatusOK, &s)
	return s, err
}

// SnapshotSession stores the session's /work on the server; CreateSession
// with FromSnapshot starts sessions from it.
func (c *Client) SnapshotSession(ctx context.Context, id string) (api.SessionSnapshot, error) {
	var s api.SessionSnapshot
	err := c.sessionCall(ctx, http.MethodPost, sessionPath(id, "/snapshot"), nil, http.StatusCreated, &s)
	return s, err
}

// SnapshotSessionMemory checkpoints the whole running session — every
// process with its memory, /work and /tmp — on a server of the gvisor
// runtime (others answer 400); CreateSession with FromSnapshot restores any
// number of forks from it. The session runs on afterwards.
func (c *Client) SnapshotSessionMemory(ctx context.Context, id string) (api.SessionSnapshot, error) {
	var s api.SessionSnapshot
	err := c.sessionCall(ctx, http.MethodPost, sessionPath(id, "/snapshot"), api.SnapshotRequest{Memory: true}, http.StatusCreated, &s)
	return s, err
}

// Snapshots lists the caller's snapshots.
func (c *Client) Snapshots(ctx context.Context) ([]api.SessionSnapshot, error) {
	var l api.SessionSnapshotList
	err := c.sessionCall(ctx, http.MethodGet, api.RouteSnapshots, nil, http.StatusOK, &l)
	return l.Snapshots, err
}

// DeleteSnapshot removes one of the caller's snapshots.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	return c.sessionCall(ctx, http.MethodDelete, api.RouteSnapshots+"/"+url.PathEscape(id), nil, http.StatusNoContent, nil)
}

// GetArchive returns the directory at dir ("" for /work) of a session as an
// uncompressed tar archive.
func (c *Client) GetArchive(ctx context.Context, id, dir string) ([]byte, error) {
	var buf bytes.Buffer
	err := c.sessionRaw(ctx, http.MethodGet, archivePath(id, dir), nil, http.StatusOK, &buf)
	return buf.Bytes(), err
}

// PutArchive unpacks an uncompressed tar archive into the directory at dir
// ("" for /work) of a session, replacing files of the same names.
func (c *Client) PutArchive(ctx context.Context, id, dir string, archive io.Reader) error {
	return c.sessionRaw(ctx, http.MethodPut, archivePath(id, dir), archive, http.StatusNoContent, nil)
}

func archivePath(id, dir string) string {
	if dir = strings.Trim(dir, "/"); dir == "" || dir == "." {
		return sessionPath(id, "/files?format=tar")
	}
	return filePath(id, dir) + "?format=tar"
}

func sessionPath(id, sub string) string { return api.RouteSessions + "/" + url.PathEscape(id) + sub }

func filePath(id, path string) string {
	var parts []string
	for p := range strings.SplitSeq(strings.TrimPrefix(path, "/"), "/") {
		parts = append(parts, url.PathEscape(p))
	}
	return sessionPath(id, "/files/"+strings.Join(parts, "/"))
}

// sessionCall sends in as JSON (nil: no body) and decodes a JSON answer
// into out (nil: none expected).
func (c *Client) sessionCall(ctx context.Context, method, route string, in any, want int, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	var buf bytes.Buffer
	if err := c.sessionRaw(ctx, method, route, body, want, &buf); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(buf.Bytes(), out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, route, err)
	}
	return nil
}

// sessionRaw sends body (JSON for POST, bytes for PUT) and copies a
// successful answer to out.
func (c *Client) sessionRaw(ctx context.Context, method, route string, body io.Reader, want int, out *bytes.Buffer) error {
	// route is escaped already (a file name's own "%" or "?" stays in it).
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.base.String(), "/")+route, body)
	if err != nil {
		return err
	}
	switch {
	case method == http.MethodPut && strings.HasSuffix(route, "?format=tar"):
		req.Header.Set("Content-Type", api.ContentTypeTar)
	case method == http.MethodPut:
		req.Header.Set("Content-Type", api.ContentTypeOctets)
	case body != nil:
		req.Header.Set("Content-Type", api.ContentTypeJSON)
	}
	c.decorate(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", route, api.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return apiError(resp)
	}
	if out != nil {
		if _, err := io.Copy(out, io.LimitReader(resp.Body, maxResponseBytes)); err != nil {
			return fmt.Errorf("%s %s: read the answer: %w", method, route, err)
		}
	}
	return nil
}
