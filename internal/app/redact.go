package app

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
)

// secretShape matches what must never be posted or logged whatever its origin: GitHub
// tokens, PEM blocks, common API-key shapes, token-bearing query parameters.
var secretShape = regexp.MustCompile(
	`(?:gh[pousr]_[A-Za-z0-9_]{8,}|github_pat_[A-Za-z0-9_]{8,}` +
		`|-----BEGIN[^-]*-----[\s\S]*?(?:-----END[^-]*-----|$)` +
		`|sk-(?:ant-)?[A-Za-z0-9_-]{16,}` +
		`|(?i:(?:access_token|token|jwt|sig)=)[^&\s"']+)`)

// redactor removes the process's own secrets (the App key, the webhook secret, model keys:
// given as options) and anything secret-shaped from text about to leave the process.
type redactor struct{ secrets []string }

func newRedactor(secrets [][]byte) redactor {
	var r redactor
	for _, s := range secrets {
		for _, line := range strings.Split(string(s), "\n") {
			// PEM bodies are caught line by line too, in case one is quoted in part.
			if line = strings.TrimSpace(line); len(line) >= 8 {
				r.secrets = append(r.secrets, line)
			}
		}
	}
	return r
}

func (r redactor) text(s string) string {
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return secretShape.ReplaceAllString(s, "[redacted]")
}

func (w *Worker) redactor() redactor { return w.red }

// RedactingHandler wraps a slog handler so no record leaves with a secret in its message
// or its string attributes: the last line of defence for logs.
func RedactingHandler(h slog.Handler, secrets [][]byte) slog.Handler {
	return redactHandler{h: h, r: newRedactor(secrets)}
}

type redactHandler struct {
	h slog.Handler
	r redactor
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.text(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.text(v.String()))
	case slog.KindGroup:
		var as []any
		for _, g := range v.Group() {
			as = append(as, h.attr(g))
		}
		return slog.Group(a.Key, as...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.text(err.Error()))
		}
		return slog.String(a.Key, h.r.text(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return redactHandler{h: h.h.WithAttrs(out), r: h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h: h.h.WithGroup(name), r: h.r}
}
