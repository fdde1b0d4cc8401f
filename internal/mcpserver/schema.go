package mcpserver

import (
	"context"
	"log/slog"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// singleTypes rewrites the ["null", T] types that schema inference gives
// slices, maps and pointers into plain T, throughout s. Those properties are
// optional (absent, never null), and single types are what every client's
// schema dialect understands (Gemini's OpenAPI subset rejects type arrays).
func singleTypes(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		for _, t := range s.Types {
			if t != "null" {
				s.Type = t
			}
		}
		s.Types = nil
	}
	for _, p := range s.Properties {
		singleTypes(p)
	}
	singleTypes(s.Items)
	singleTypes(s.AdditionalProperties)
}

// sdkLogger passes the SDK's own chatter (session start and end, level
// changes) only when debugging; its warnings and errors always.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(quietHandler{log.Handler()})
}

type quietHandler struct{ slog.Handler }

func (q quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if l < slog.LevelWarn && !q.Handler.Enabled(ctx, slog.LevelDebug) {
		return false
	}
	return q.Handler.Enabled(ctx, l)
}

func (q quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{q.Handler.WithAttrs(as)}
}

func (q quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{q.Handler.WithGroup(name)}
}
