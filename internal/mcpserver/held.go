package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// Held sandboxes (sessions of the sandbox layer, not of MCP's transport): an
// agent writes a file in one call and runs it in the next. Every sandbox a
// connection opens belongs to that connection: another connection cannot name
// it, and it ends when the connection ends, at its TTL or idle timeout, or at
// session_close. A call that names no session uses the connection's default
// one, opened on first use, so an agent that never thinks about sessions still
// keeps its files between calls.

// SessionOpener opens held sandboxes; an in-process *sandbox.Manager is one.
type SessionOpener interface {
	OpenSession(ctx context.Context, spec sandbox.SessionSpec) (*sandbox.Sandbox, error)
}

var _ SessionOpener = (*sandbox.Manager)(nil)

// defaultMaxHeld bounds the sandboxes one connection holds at once.
const defaultMaxHeld = 4

// held tracks the sandboxes of each MCP connection.
type held struct {
	open SessionOpener
	max  int

	mu    sync.Mutex
	conns map[*mcp.ServerSession]*connHeld
	shut  bool
	dir   string // snapshot files, made on first use
}

type connHeld struct {
	byID  map[string]*sandbox.Sandbox
	def   string // the default session's id, "" until opened
	order []string
	snaps []*heldSnapshot // oldest first
}

func newHeld(open SessionOpener, max int) *held {
	if max <= 0 {
		max = defaultMaxHeld
	}
	return &held{open: open, max: max, conns: map[*mcp.ServerSession]*connHeld{}}
}

// conn returns the connection's record, creating it (and the watcher that
// closes its sandboxes when the connection ends) on first use.
func (h *held) conn(ss *mcp.ServerSession) (*connHeld, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shut {
		return nil, errors.New("aster mcp is shutting down")
	}
	c, ok := h.conns[ss]
	if !ok {
		c = &connHeld{byID: map[string]*sandbox.Sandbox{}}
		h.conns[ss] = c
		go func() {
			_ = ss.Wait()
			h.closeConn(ss)
		}()
	}
	return c, nil
}

// add records a new sandbox of the connection, or refuses it past the cap.
// A default that lost a race to another default is refused with the winner.
func (h *held) add(ss *mcp.ServerSession, sb *sandbox.Sandbox, isDefault bool) (*sandbox.Sandbox, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[ss]
	if !ok || h.shut {
		return nil, errors.New("the MCP connection has ended")
	}
	h.pruneLocked(c)
	if won, ok := c.byID[c.def]; ok && isDefault {
		return won, errLostRace
	}
	if len(c.byID) >= h.max {
		return nil, fmt.Errorf("%w: this connection already holds %d sessions (the most it may); close one with session_close", sandbox.ErrBusy, len(c.byID))
	}
	c.byID[sb.ID()] = sb
	c.order = append(c.order, sb.ID())
	if isDefault {
		c.def = sb.ID()
	}
	return sb, nil
}

// errLostRace: another call opened the connection's default session first.
var errLostRace = errors.New("another call opened the default session first")

// pruneLocked forgets sandboxes that have ended (TTL, idle, broken).
func (h *held) pruneLocked(c *connHeld) {
	for id, sb := range c.byID {
		select {
		case <-sb.Done():
			delete(c.byID, id)
			c.order = slices.DeleteFunc(c.order, func(x string) bool { return x == id })
			if c.def == id {
				c.def = ""
			}
		default:
		}
	}
}

// get returns the connection's session id, or its default one ("" id). It
// reports ok=false for the default when none is open yet.
func (h *held) get(ss *mcp.ServerSession, id string) (*sandbox.Sandbox, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[ss]
	if !ok {
		if id == "" {
			return nil, false, nil
		}
		return nil, false, unknownSession(id)
	}
	h.pruneLocked(c)
	if id == "" {
		sb, ok := c.byID[c.def]
		return sb, ok, nil
	}
	sb, ok := c.byID[id]
	if !ok {
		return nil, false, unknownSession(id)
	}
	return sb, true, nil
}

func unknownSession(id string) error {
	return fmt.Errorf("%w: no session %q on this connection (it never existed, has ended, or belongs to another connection); session_list shows the open ones", api.ErrNotFound, id)
}

// list returns the connection's live sessions in the order they were opened.
func (h *held) list(ss *mcp.ServerSession) ([]*sandbox.Sandbox, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[ss]
	if !ok {
		return nil, ""
	}
	h.pruneLocked(c)
	out := make([]*sandbox.Sandbox, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.byID[id])
	}
	return out, c.def
}

// remove forgets one session of the connection and returns it.
func (h *held) remove(ss *mcp.ServerSession, id string) (*sandbox.Sandbox, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[ss]
	if !ok {
		return nil, unknownSession(id)
	}
	if id == "" {
		id = c.def
	}
	sb, ok := c.byID[id]
	if !ok {
		return nil, unknownSession(id)
	}
	delete(c.byID, id)
	c.order = slices.DeleteFunc(c.order, func(x string) bool { return x == id })
	if c.def == id {
		c.def = ""
	}
	return sb, nil
}

// closeConn destroys every sandbox of a connection that has ended.
func (h *held) closeConn(ss *mcp.ServerSession) {
	h.mu.Lock()
	c := h.conns[ss]
	delete(h.conns, ss)
	h.mu.Unlock()
	if c != nil {
		removeSnapshots(c.snaps)
		closeAll(slices.Collect(maps.Values(c.byID)))
	}
}

// shutdown destroys every held sandbox and refuses new ones.
func (h *held) shutdown() {
	h.mu.Lock()
	h.shut = true
	var all []*sandbox.Sandbox
	for ss, c := range h.conns {
		all = append(all, slices.Collect(maps.Values(c.byID))...)
		removeSnapshots(c.snaps)
		delete(h.conns, ss)
	}
	dir := h.dir
	h.mu.Unlock()
	closeAll(all)
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

func closeAll(all []*sandbox.Sandbox) {
	var wg sync.WaitGroup
	for _, sb := range all {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = sb.Close(ctx)
		})
	}
	wg.Wait()
}

// SessionCreateInput is session_create's arguments.
type SessionCreateInput struct {
	Image        string            `json:"image,omitempty" jsonschema:"sandbox image from the server's allowlist (default: the first one)."`
	Files        map[string]string `json:"files,omitempty" jsonschema:"files to place under /work when the session starts: relative path to UTF-8 content."`
	Env          map[string]string `json:"env,omitempty" jsonschema:"environment variables every command of the session gets (a command's own env wins)."`
	Limits       *LimitsInput      `json:"limits,omitempty" jsonschema:"resource limits: memory, cpus, pids, workdir_size and tmp_size hold for all the session's commands together; timeout, output_limit and output_ceiling for each command."`
	TTL          string            `json:"ttl,omitempty" jsonschema:"the session's whole life, e.g. \"30m\" (default: the server's)."`
	IdleTimeout  string            `json:"idle_timeout,omitempty" jsonschema:"the session ends after this long without a call, e.g. \"10m\" (default: the server's)."`
	FromSnapshot string            `json:"from_snapshot,omitempty" jsonschema:"a snapshot_id from session_snapshot on this connection: the new session's /work starts as that snapshot's (files go over it); its image is the snapshot's unless image is given."`
}

// SessionInfo is what the session tools say about a session.
type SessionInfo struct {
	SessionID   string `json:"session_id"`
	Default     bool   `json:"default,omitempty"`
	Image       string `json:"image"`
	CreatedAt   string `json:"created_at"`
	ExpiresAt   string `json:"expires_at"`
	IdleTimeout string `json:"idle_timeout"`
	Running     int    `json:"running"`
}

// SessionList is session_list's result.
type SessionList struct {
	Sessions []SessionInfo `json:"sessions"`
}

// SessionRef names a session; empty means the connection's default one.
type SessionRef struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session, from session_create; omit it to use this connection's default session (opened on first use)."`
}

// SessionExecInput is session_exec's arguments.
type SessionExecInput struct {
	SessionID string            `json:"session_id,omitempty" jsonschema:"the session, from session_create; omit it to use this connection's default session (opened on first use)."`
	Argv      []string          `json:"argv" jsonschema:"the command and its arguments, executed directly with no shell, e.g. [\"python3\", \"main.py\"]. For pipes or redirection use [\"sh\", \"-c\", \"...\"]."`
	Stdin     string            `json:"stdin,omitempty" jsonschema:"text fed to the command's standard input (default: empty)."`
	Env       map[string]string `json:"env,omitempty" jsonschema:"environment variables added to the session's for this command."`
	Workdir   string            `json:"workdir,omitempty" jsonschema:"working directory relative to /work (default /work itself)."`
	Timeout   string            `json:"timeout,omitempty" jsonschema:"wall-clock limit of this command, e.g. \"30s\" (default: the session's timeout limit)."`
}

// SessionWriteInput is session_write_file's arguments.
type SessionWriteInput struct {
	SessionID     string `json:"session_id,omitempty" jsonschema:"the session; omit it to use this connection's default session."`
	Path          string `json:"path" jsonschema:"the file, relative to /work; its directories are created."`
	Content       string `json:"content,omitempty" jsonschema:"the file's UTF-8 content. Give content or content_base64."`
	ContentBase64 string `json:"content_base64,omitempty" jsonschema:"the file's content, base64-encoded, for binary files."`
}

// SessionPathInput names a path in a session.
type SessionPathInput struct {
	SessionID string `json:"session_id,omitempty" jsonschema:"the session; omit it to use this connection's default session."`
	Path      string `json:"path,omitempty" jsonschema:"relative to /work; for session_list_files, empty lists /work itself."`
}

// SessionFile is session_read_file's result.
type SessionFile struct {
	Path          string `json:"path"`
	Size          int    `json:"size"`
	Content       string `json:"content,omitempty"`
	ContentBase64 string `json:"content_base64,omitempty"`
}

// SessionFiles is session_list_files's result.
type SessionFiles struct {
	Path    string              `json:"path"`
	Entries []sandbox.FileEntry `json:"entries"`
}

// SessionClosed is session_close's result.
type SessionClosed struct {
	SessionID string `json:"session_id"`
	Closed    bool   `json:"closed"`
}

func (s *Server) addSessionTools() error {
	if s.held == nil {
		return nil
	}
	createIn, err := inputSchemaFor[SessionCreateInput](s)
	if err != nil {
		return err
	}
	res, err := resultSchema()
	if err != nil {
		return err
	}
	// Every schema with single types (a slice infers as ["null","array"],
	// which single-type dialects refuse), as the other tools' are.
	in := map[string]*jsonschema.Schema{}
	for name, f := range map[string]func(*Server) (*jsonschema.Schema, error){
		"exec": inputSchemaFor[SessionExecInput], "write": inputSchemaFor[SessionWriteInput],
		"path": inputSchemaFor[SessionPathInput], "ref": inputSchemaFor[SessionRef], "none": inputSchemaFor[struct{}],
	} {
		if in[name], err = f(s); err != nil {
			return err
		}
	}
	out := map[string]*jsonschema.Schema{}
	for name, f := range map[string]func() (*jsonschema.Schema, error){
		"info": outputSchemaFor[SessionInfo], "list": outputSchemaFor[SessionList], "file": outputSchemaFor[SessionFile],
		"files": outputSchemaFor[SessionFiles], "closed": outputSchemaFor[SessionClosed], "snapshot": outputSchemaFor[SessionSnapshotInfo],
	} {
		if out[name], err = f(); err != nil {
			return err
		}
	}
	local := &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "session_create",
		Title: "Open a sandbox that lives across calls",
		Description: fmt.Sprintf(`Open a hardened Linux sandbox that stays alive across calls: write files with session_write_file, run commands with session_exec, and the files and anything the commands leave in /work and /tmp are still there in the next call. No network, no capabilities, a non-root user, a read-only root filesystem, capped memory, CPU, processes and disk, as for execute.

You rarely need this tool: session_exec, session_write_file and the other session tools open this connection's default session on first use. Open more sessions (at most %d per connection) to keep separate environments apart. Every session ends when this connection ends, at its ttl, after idle_timeout without a call, or at session_close.

Images: %s. Default limits: %s.`, s.held.max, imageList(s.opts.Images), limitsSummary(s.opts.Defaults)),
		InputSchema:  createIn,
		OutputSchema: out["info"],
		Annotations:  local,
	}, s.sessionCreate)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:         "session_exec",
		Title:        "Run a command in a session",
		Description:  `Run a command in a session (the connection's default session when session_id is omitted; it is opened on first use) and return how it ended and what it printed, as execute does: status (ok, exit_nonzero, timeout, oom, output_limit, killed, error), exit_code, stdout and stderr. Files and state left by earlier calls are there. A command that times out or runs out of memory ends alone: the session lives on.`,
		InputSchema:  in["exec"],
		OutputSchema: res,
		Annotations:  local,
	}, s.sessionExec)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:         "session_write_file",
		Title:        "Write a file into a session",
		Description:  `Write a file under /work in a session (replacing any file of that name; its directories are created). Paths are relative to /work; ".." and absolute paths outside /work are refused, and a write through a symlink is refused. The session's /work size caps the file.`,
		InputSchema:  in["write"],
		OutputSchema: out["file"],
		Annotations:  local,
	}, s.sessionWrite)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:         "session_read_file",
		Title:        "Read a file from a session",
		Description:  `Read a file under /work from a session. UTF-8 text comes back as content, anything else as content_base64.`,
		InputSchema:  in["path"],
		OutputSchema: out["file"],
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, s.sessionRead)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:         "session_list_files",
		Title:        "List a directory of a session",
		Description:  `List a directory under /work of a session (path empty: /work itself): each entry's name, type (file, dir, symlink, other), size and modification time.`,
		InputSchema:  in["path"],
		OutputSchema: out["files"],
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, s.sessionList)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:         "session_list",
		Title:        "List this connection's sessions",
		Description:  `List the sessions this connection holds: id, image, when each expires, its idle timeout, and the commands running in it.`,
		InputSchema:  in["none"],
		OutputSchema: out["list"],
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
	}, s.sessionListAll)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:         "session_snapshot",
		Title:        "Snapshot a session's files",
		Description:  fmt.Sprintf(`Keep a copy of a session's /work (the default session when session_id is omitted) and return its snapshot_id; session_create with from_snapshot then starts any number of new sessions from it, each with its own copy. Files only: /tmp, processes and memory are not kept. A snapshot lasts as long as this connection; it keeps its newest %d.`, maxHeldSnapshots),
		InputSchema:  in["ref"],
		OutputSchema: out["snapshot"],
		Annotations:  local,
	}, s.sessionSnapshot)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:         "session_close",
		Title:        "Close a session",
		Description:  `Close a session (the default one when session_id is omitted): its sandbox is destroyed with every file and process in it.`,
		InputSchema:  in["ref"],
		OutputSchema: out["closed"],
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}, s.sessionClose)
	return nil
}

// outputSchemaFor infers a tool's output schema with single types.
func outputSchemaFor[T any]() (*jsonschema.Schema, error) {
	sch, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	singleTypes(sch)
	return sch, nil
}

// sessionSpec turns session_create's arguments into a session spec.
func (s *Server) sessionSpec(in SessionCreateInput) (sandbox.SessionSpec, error) {
	limits, _, err := resolveLimits(in.Limits, s.opts.Defaults, s.opts.Ceilings)
	if err != nil {
		return sandbox.SessionSpec{}, err
	}
	spec := sandbox.SessionSpec{Image: in.Image, Env: in.Env, Limits: limits}
	if spec.Image == "" {
		spec.Image = s.opts.Images[0]
	}
	for _, d := range []struct {
		field, text string
		to          *time.Duration
	}{{"ttl", in.TTL, &spec.TTL}, {"idle_timeout", in.IdleTimeout, &spec.IdleTimeout}} {
		if d.text == "" {
			continue
		}
		v, err := units.ParseDuration(d.text)
		if err != nil {
			return spec, sandbox.Invalidf("%s %q: %v", d.field, d.text, err)
		}
		*d.to = v
	}
	if len(in.Files) > 0 {
		spec.Files = make(map[string][]byte, len(in.Files))
		for name, content := range in.Files {
			spec.Files[name] = []byte(content)
		}
	}
	return spec, nil
}

func (s *Server) sessionCreate(ctx context.Context, req *mcp.CallToolRequest, in SessionCreateInput) (*mcp.CallToolResult, SessionInfo, error) {
	ctx, done := s.track(ctx)
	defer done()
	spec, err := s.sessionSpec(in)
	if err != nil {
		return nil, SessionInfo{}, toolError(err)
	}
	if in.FromSnapshot != "" {
		sn, err := s.held.snapshot(req.Session, in.FromSnapshot)
		if err != nil {
			return nil, SessionInfo{}, toolError(err)
		}
		f, err := os.Open(sn.path)
		if err != nil {
			return nil, SessionInfo{}, toolError(fmt.Errorf("%w: snapshot %q is gone", api.ErrNotFound, sn.id))
		}
		defer f.Close()
		spec.Archive = f
		if in.Image == "" {
			spec.Image = sn.image
		}
	}
	sb, err := s.openHeld(ctx, req.Session, spec, false)
	if err != nil {
		return nil, SessionInfo{}, toolError(err)
	}
	info := sessionInfo(sb, false)
	return textResult(fmt.Sprintf("session %s open (image %s); it ends at %s, or after %s without a call, or when this connection ends",
		info.SessionID, info.Image, info.ExpiresAt, info.IdleTimeout)), info, nil
}

// openHeld opens a sandbox for the connection and records it.
func (s *Server) openHeld(ctx context.Context, ss *mcp.ServerSession, spec sandbox.SessionSpec, isDefault bool) (*sandbox.Sandbox, error) {
	if _, err := s.held.conn(ss); err != nil {
		return nil, err
	}
	sb, err := s.held.open.OpenSession(ctx, spec)
	if err != nil {
		return nil, err
	}
	won, err := s.held.add(ss, sb, isDefault)
	if err != nil {
		_ = sb.Close(context.WithoutCancel(ctx))
		if errors.Is(err, errLostRace) {
			return won, nil
		}
		return nil, err
	}
	s.log.Info("session opened", "session", sb.ID(), "default", isDefault)
	return sb, nil
}

// session returns the named session of the connection, or its default one,
// opening that on first use.
func (s *Server) session(ctx context.Context, ss *mcp.ServerSession, id string) (*sandbox.Sandbox, error) {
	sb, ok, err := s.held.get(ss, id)
	if err != nil || ok {
		return sb, err
	}
	spec, err := s.sessionSpec(SessionCreateInput{})
	if err != nil {
		return nil, err
	}
	// Two first calls at once may both get here: the first default recorded
	// wins, and the other call's sandbox is closed.
	return s.openHeld(ctx, ss, spec, true)
}

func sessionInfo(sb *sandbox.Sandbox, isDefault bool) SessionInfo {
	i := sb.Info()
	return SessionInfo{
		SessionID: i.ID, Default: isDefault, Image: i.Image,
		CreatedAt: i.Created.UTC().Format(time.RFC3339), ExpiresAt: i.ExpiresAt.UTC().Format(time.RFC3339),
		IdleTimeout: units.FormatDuration(i.IdleTimeout), Running: i.Running,
	}
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (s *Server) sessionExec(ctx context.Context, req *mcp.CallToolRequest, in SessionExecInput) (*mcp.CallToolResult, sandbox.WireResult, error) {
	ctx, done := s.track(ctx)
	defer done()
	if len(in.Argv) == 0 {
		return nil, sandbox.WireResult{}, toolError(sandbox.Invalidf("argv is empty: give the command to run, e.g. [\"python3\", \"main.py\"]"))
	}
	e := sandbox.ExecSpec{Argv: in.Argv, Env: in.Env, Workdir: in.Workdir}
	if in.Timeout != "" {
		d, err := units.ParseDuration(in.Timeout)
		if err != nil {
			return nil, sandbox.WireResult{}, toolError(sandbox.Invalidf("timeout %q: %v", in.Timeout, err))
		}
		e.TimeoutMS = d.Milliseconds()
	}
	if in.Stdin != "" {
		e.Stdin = strings.NewReader(in.Stdin)
	}
	sb, err := s.session(ctx, req.Session, in.SessionID)
	if err != nil {
		return nil, sandbox.WireResult{}, toolError(err)
	}
	p := newProgress(ctx, req, s.opts.ProgressInterval)
	e.OnOutput = p.output
	p.begin()
	p.admittedNow()
	start := time.Now()
	res, err := sb.Exec(ctx, e)
	p.finish(res.Status)
	if err != nil && res.Status == sandbox.StatusError {
		s.log.Info("session exec refused", "session", sb.ID(), "code", api.ErrorCode(err), "err", err)
		return nil, sandbox.WireResult{}, toolError(err)
	}
	s.log.Info("session exec finished", "session", sb.ID(), "status", res.Status, "exit", res.ExitCode, "ms", time.Since(start).Milliseconds())
	limits := sb.Info().Limits
	if e.TimeoutMS > 0 {
		limits.TimeoutMS = e.TimeoutMS
	}
	result := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: "session " + sb.ID() + "\n" + renderResult(res, limits)}},
		IsError: res.Status == sandbox.StatusError,
	}
	return result, res.Wire(), nil
}

func (s *Server) sessionWrite(ctx context.Context, req *mcp.CallToolRequest, in SessionWriteInput) (*mcp.CallToolResult, SessionFile, error) {
	ctx, done := s.track(ctx)
	defer done()
	data := []byte(in.Content)
	switch {
	case in.Content != "" && in.ContentBase64 != "":
		return nil, SessionFile{}, toolError(sandbox.Invalidf("give content or content_base64, not both"))
	case in.ContentBase64 != "":
		b, err := base64.StdEncoding.DecodeString(in.ContentBase64)
		if err != nil {
			return nil, SessionFile{}, toolError(sandbox.Invalidf("content_base64: %v", err))
		}
		data = b
	}
	sb, err := s.session(ctx, req.Session, in.SessionID)
	if err != nil {
		return nil, SessionFile{}, toolError(err)
	}
	if err := sb.PutFile(ctx, in.Path, data); err != nil {
		return nil, SessionFile{}, toolError(err)
	}
	return textResult(fmt.Sprintf("wrote %s (%s) in session %s", in.Path, units.FormatBytes(int64(len(data))), sb.ID())),
		SessionFile{Path: in.Path, Size: len(data)}, nil
}

func (s *Server) sessionRead(ctx context.Context, req *mcp.CallToolRequest, in SessionPathInput) (*mcp.CallToolResult, SessionFile, error) {
	ctx, done := s.track(ctx)
	defer done()
	sb, err := s.session(ctx, req.Session, in.SessionID)
	if err != nil {
		return nil, SessionFile{}, toolError(err)
	}
	data, err := sb.GetFile(ctx, in.Path)
	if err != nil {
		return nil, SessionFile{}, toolError(err)
	}
	out := SessionFile{Path: in.Path, Size: len(data)}
	if utf8.Valid(data) {
		out.Content = string(data)
		return textResult(out.Content), out, nil
	}
	out.ContentBase64 = base64.StdEncoding.EncodeToString(data)
	return textResult(fmt.Sprintf("%s is binary (%s); its bytes are in content_base64", in.Path, units.FormatBytes(int64(len(data))))), out, nil
}

func (s *Server) sessionList(ctx context.Context, req *mcp.CallToolRequest, in SessionPathInput) (*mcp.CallToolResult, SessionFiles, error) {
	ctx, done := s.track(ctx)
	defer done()
	sb, err := s.session(ctx, req.Session, in.SessionID)
	if err != nil {
		return nil, SessionFiles{}, toolError(err)
	}
	entries, err := sb.List(ctx, in.Path)
	if err != nil {
		return nil, SessionFiles{}, toolError(err)
	}
	if entries == nil {
		entries = []sandbox.FileEntry{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "/work/%s: %d entries\n", strings.TrimPrefix(in.Path, "/work/"), len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%-7s %10d  %s\n", e.Type, e.Size, e.Name)
	}
	return textResult(b.String()), SessionFiles{Path: in.Path, Entries: entries}, nil
}

func (s *Server) sessionListAll(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, SessionList, error) {
	all, def := s.held.list(req.Session)
	out := SessionList{Sessions: []SessionInfo{}}
	var b strings.Builder
	for _, sb := range all {
		i := sessionInfo(sb, sb.ID() == def)
		out.Sessions = append(out.Sessions, i)
		mark := ""
		if i.Default {
			mark = " (default)"
		}
		fmt.Fprintf(&b, "%s%s image %s, ends %s, %d running\n", i.SessionID, mark, i.Image, i.ExpiresAt, i.Running)
	}
	if len(all) == 0 {
		b.WriteString("no sessions open on this connection")
	}
	return textResult(b.String()), out, nil
}

func (s *Server) sessionClose(ctx context.Context, req *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, SessionClosed, error) {
	ctx, done := s.track(ctx)
	defer done()
	sb, err := s.held.remove(req.Session, in.SessionID)
	if err != nil {
		return nil, SessionClosed{}, toolError(err)
	}
	if err := sb.Close(context.WithoutCancel(ctx)); err != nil {
		return nil, SessionClosed{}, toolError(err)
	}
	s.log.Info("session closed", "session", sb.ID())
	return textResult("session " + sb.ID() + " closed; its sandbox is gone"), SessionClosed{SessionID: sb.ID(), Closed: true}, nil
}
