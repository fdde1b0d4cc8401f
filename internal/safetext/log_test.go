package safetext_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/safetext"
)

func TestRedaction(t *testing.T) {
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx0123456789abcdefghijklmnopqrstuv\n-----END RSA PRIVATE KEY-----\n"
	r := safetext.NewRedactor([]string{key, "hunter2-webhook-secret"})
	for _, in := range []string{
		"token ghs_abcdefghijklmnopqrstuvwxyz0123456789 leaked",
		"key line MIIEowIBAAKCAQEAx0123456789abcdefghijklmnopqrstuv quoted",
		"the secret is hunter2-webhook-secret",
		"https://codeload.example/x.tar.gz?token=AAAABBBBCCCC",
		"model key sk-ant-api03-abcdefghijklmnop0123",
	} {
		if out := r.RedactString(in); !strings.Contains(out, "[REDACTED:") || out == in {
			t.Errorf("not redacted: %q → %q", in, out)
		}
	}
	var buf bytes.Buffer
	log := slog.New(safetext.RedactingHandler(slog.NewTextHandler(&buf, nil), safetext.NewRedactor([]string{"hunter2-webhook-secret"})))
	log.With("cfg", "secret=hunter2-webhook-secret").Info("msg ghp_abcdefghijklmnopqrstuvwxyz012345",
		"err", errors.New("failed with hunter2-webhook-secret"), slog.Group("g", "v", "hunter2-webhook-secret"))
	if s := buf.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "ghp_") {
		t.Fatalf("log leaked: %s", s)
	}
}
