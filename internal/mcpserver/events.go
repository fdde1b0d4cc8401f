package mcpserver

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamsPerSession is how many response streams of one session keep their
// events for resumption: the most recent ones, enough for that many calls
// running at once, plus the session's standalone stream.
const streamsPerSession = 16

// errStreamDropped is Append's answer for a stream whose events were dropped
// to make room for newer ones: the event still goes to a connected client.
var errStreamDropped = errors.New("event stream dropped from the event store")

// eventStore is the EventStore of the streamable transport: it keeps the
// events of response streams so that a client whose connection breaks can
// resume (Last-Event-ID). The SDK's MemoryEventStore bounds the bytes of all
// events but keeps a record of every stream a session ever had until the
// session ends (~270 bytes a call, for as long as a client keeps its
// session), and purges by walking every stream. This one keeps the
// streamsPerSession most recent streams of a session, bounds the bytes of
// all sessions together, and drops the oldest events first in constant time.
type eventStore struct {
	mu       sync.Mutex
	maxBytes int
	nBytes   int
	sessions map[string]*sessionEvents
	// withData lists the streams holding events, the one that has held
	// them longest first: the purge takes from its front.
	withData list.List
}

type sessionEvents struct {
	streams map[string]*streamEvents
	// order lists the session's streams but the standalone one (id ""),
	// oldest first; at most streamsPerSession.
	order []*streamEvents
}

type streamEvents struct {
	id    string
	first int // the stream index of data[0]
	data  [][]byte
	size  int
	elem  *list.Element // in withData while data is not empty
}

var _ mcp.EventStore = (*eventStore)(nil)

func newEventStore(maxBytes int) *eventStore {
	return &eventStore{maxBytes: maxBytes, sessions: map[string]*sessionEvents{}}
}

// Open implements mcp.EventStore: a new stream of a session, which may
// push the session's oldest stream out.
func (s *eventStore) Open(_ context.Context, sessionID, streamID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.sessions[sessionID]
	if se == nil {
		se = &sessionEvents{streams: map[string]*streamEvents{}}
		s.sessions[sessionID] = se
	}
	if _, ok := se.streams[streamID]; ok {
		return nil
	}
	st := &streamEvents{id: streamID}
	se.streams[streamID] = st
	if streamID == "" {
		return nil
	}
	if len(se.order) == streamsPerSession {
		old := se.order[0]
		se.order = slices.Delete(se.order, 0, 1)
		s.dropLocked(old)
		delete(se.streams, old.id)
	}
	se.order = append(se.order, st)
	return nil
}

// Append implements mcp.EventStore. Like the SDK's store it makes room
// before it adds, so the newest event is always kept.
func (s *eventStore) Append(_ context.Context, sessionID, streamID string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.sessions[sessionID]
	if se == nil {
		return fmt.Errorf("session %q: %w", sessionID, errStreamDropped)
	}
	st := se.streams[streamID]
	if st == nil {
		return fmt.Errorf("stream %q of session %q: %w", streamID, sessionID, errStreamDropped)
	}
	s.purgeLocked()
	st.data = append(st.data, data)
	st.size += len(data)
	s.nBytes += len(data)
	if st.elem == nil {
		st.elem = s.withData.PushBack(st)
	}
	return nil
}

// After implements mcp.EventStore.
func (s *eventStore) After(_ context.Context, sessionID, streamID string, index int) iter.Seq2[[]byte, error] {
	data, err := func() ([][]byte, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		se := s.sessions[sessionID]
		if se == nil {
			return nil, fmt.Errorf("unknown session %q", sessionID)
		}
		st := se.streams[streamID]
		if st == nil {
			return nil, fmt.Errorf("stream %q of session %q: %w", streamID, sessionID, mcp.ErrEventsPurged)
		}
		start := index + 1 - st.first
		if start < 0 {
			return nil, fmt.Errorf("stream %q of session %q, after event %d: %w", streamID, sessionID, index, mcp.ErrEventsPurged)
		}
		if start >= len(st.data) {
			return nil, nil
		}
		return slices.Clone(st.data[start:]), nil
	}()
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range data {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// SessionClosed implements mcp.EventStore.
func (s *eventStore) SessionClosed(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.sessions[sessionID]; se != nil {
		for _, st := range se.streams {
			s.dropLocked(st)
		}
		delete(s.sessions, sessionID)
	}
	return nil
}

// dropLocked forgets a stream's events.
func (s *eventStore) dropLocked(st *streamEvents) {
	s.nBytes -= st.size
	st.first += len(st.data)
	st.data, st.size = nil, 0
	if st.elem != nil {
		s.withData.Remove(st.elem)
		st.elem = nil
	}
}

// purgeLocked drops the oldest events until the store is within maxBytes.
func (s *eventStore) purgeLocked() {
	for s.nBytes > s.maxBytes {
		front := s.withData.Front()
		if front == nil {
			return
		}
		st := front.Value.(*streamEvents)
		n := len(st.data[0])
		st.data[0] = nil
		st.data = st.data[1:]
		st.first++
		st.size -= n
		s.nBytes -= n
		if len(st.data) == 0 {
			s.withData.Remove(st.elem)
			st.elem = nil
			st.data = nil
		}
	}
}

// streams returns the streams and bytes the store holds (tests).
func (s *eventStore) streams() (streams, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, se := range s.sessions {
		streams += len(se.streams)
	}
	return streams, s.nBytes
}
