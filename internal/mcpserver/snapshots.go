package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/units"
)

// Snapshots of a session's /work, taken by session_snapshot and started from
// by session_create's from_snapshot: an archive of /work made inside the
// sandbox by the job user (as the HTTP API's snapshots are), kept in a file of
// the server's until the connection ends. Like a session, a snapshot belongs to
// the connection that took it: another connection naming its id gets
// not_found. A connection keeps its newest few; taking one more drops the
// oldest.

// maxHeldSnapshots bounds the snapshots one connection keeps.
const maxHeldSnapshots = 4

type heldSnapshot struct {
	id, path, image, session string
	size                     int64
	at                       time.Time
}

// SessionSnapshotInfo is session_snapshot's result.
type SessionSnapshotInfo struct {
	SnapshotID string `json:"snapshot_id"`
	SessionID  string `json:"session_id"`
	Image      string `json:"image"`
	Size       int64  `json:"size"`
	CreatedAt  string `json:"created_at"`
	// Dropped is the connection's oldest snapshot, removed to keep at most
	// four.
	Dropped string `json:"dropped,omitempty"`
}

// snapshotDir is the directory the server's snapshot files go in, made on
// first use and removed at shutdown.
func (h *held) snapshotDir() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir == "" {
		d, err := os.MkdirTemp("", "aster-mcp-snapshots-")
		if err != nil {
			return "", fmt.Errorf("snapshot directory: %w", err)
		}
		h.dir = d
	}
	return h.dir, nil
}

// addSnapshot records a snapshot of the connection, dropping its oldest past
// the cap.
func (h *held) addSnapshot(ss *mcp.ServerSession, sn *heldSnapshot) (dropped *heldSnapshot, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.conns[ss]
	if !ok || h.shut {
		os.Remove(sn.path)
		return nil, fmt.Errorf("the MCP connection has ended")
	}
	c.snaps = append(c.snaps, sn)
	if len(c.snaps) > maxHeldSnapshots {
		dropped = c.snaps[0]
		c.snaps = slices.Delete(c.snaps, 0, 1)
		os.Remove(dropped.path)
	}
	return dropped, nil
}

// snapshot returns the connection's snapshot id.
func (h *held) snapshot(ss *mcp.ServerSession, id string) (*heldSnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.conns[ss]; ok {
		if i := slices.IndexFunc(c.snaps, func(sn *heldSnapshot) bool { return sn.id == id }); i >= 0 {
			return c.snaps[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no snapshot %q on this connection (it never existed, was dropped for a newer one, or belongs to another connection)", api.ErrNotFound, id)
}

func removeSnapshots(snaps []*heldSnapshot) {
	for _, sn := range snaps {
		os.Remove(sn.path)
	}
}

func newSnapshotID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "snap-" + hex.EncodeToString(b)
}

func (s *Server) sessionSnapshot(ctx context.Context, req *mcp.CallToolRequest, in SessionRef) (*mcp.CallToolResult, SessionSnapshotInfo, error) {
	ctx, done := s.track(ctx)
	defer done()
	sb, err := s.session(ctx, req.Session, in.SessionID)
	if err != nil {
		return nil, SessionSnapshotInfo{}, toolError(err)
	}
	b, err := sb.GetArchive(ctx, "")
	if err != nil {
		return nil, SessionSnapshotInfo{}, toolError(err)
	}
	dir, err := s.held.snapshotDir()
	if err != nil {
		return nil, SessionSnapshotInfo{}, toolError(err)
	}
	f, err := os.CreateTemp(dir, "snap-*.tar")
	if err != nil {
		return nil, SessionSnapshotInfo{}, toolError(fmt.Errorf("snapshot file: %w", err))
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, SessionSnapshotInfo{}, toolError(fmt.Errorf("snapshot file: %w", werr))
	}
	sn := &heldSnapshot{id: newSnapshotID(), path: f.Name(), image: sb.Info().Image, session: sb.ID(), size: int64(len(b)), at: time.Now()}
	dropped, err := s.held.addSnapshot(req.Session, sn)
	if err != nil {
		return nil, SessionSnapshotInfo{}, toolError(err)
	}
	info := SessionSnapshotInfo{SnapshotID: sn.id, SessionID: sn.session, Image: sn.image, Size: sn.size, CreatedAt: sn.at.UTC().Format(time.RFC3339)}
	text := fmt.Sprintf("snapshot %s of session %s's /work (%s); session_create with from_snapshot starts a new session from it", sn.id, sn.session, units.FormatBytes(sn.size))
	if dropped != nil {
		info.Dropped = dropped.id
		text += fmt.Sprintf("; the oldest snapshot, %s, was dropped (a connection keeps %d)", dropped.id, maxHeldSnapshots)
	}
	return textResult(text), info, nil
}
