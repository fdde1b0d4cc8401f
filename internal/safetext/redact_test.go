package safetext

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/safetext/safetexttest"
)

func TestRedactPatterns(t *testing.T) {
	cases := []struct {
		rule, text, secret string
	}{
		{"github-token", "token = '" + safetexttest.FakeSecret("ghp_", 36) + "'", safetexttest.FakeSecret("ghp_", 36)},
		{"github-fine-grained-pat", safetexttest.FakeSecret("github_pat_", 60), safetexttest.FakeSecret("github_pat_", 60)},
		{"aws-access-key-id", "AWS_ACCESS_KEY_ID=AKIA" + strings.ToUpper(safetexttest.FakeSecret("", 16)), "AKIA" + strings.ToUpper(safetexttest.FakeSecret("", 16))},
		{"aws-secret-key", `aws_secret_access_key = "` + safetexttest.FakeSecret("", 40) + `"`, safetexttest.FakeSecret("", 40)},
		{"slack-token", "xoxb-" + safetexttest.FakeSecret("1234-", 24), "xoxb-" + safetexttest.FakeSecret("1234-", 24)},
		{"stripe-key", "sk_live_" + safetexttest.FakeSecret("", 24), "sk_live_" + safetexttest.FakeSecret("", 24)},
		{"openai-key", "OPENAI_API_KEY=" + safetexttest.FakeSecret("sk-proj-", 40), safetexttest.FakeSecret("sk-proj-", 40)},
		{"anthropic-key", safetexttest.FakeSecret("sk-ant-api03-", 40), safetexttest.FakeSecret("sk-ant-api03-", 40)},
		{"google-api-key", "AIza" + safetexttest.FakeSecret("", 35), "AIza" + safetexttest.FakeSecret("", 35)},
		{"jwt", "Authorization: eyJ" + safetexttest.FakeSecret("", 20) + ".eyJ" + safetexttest.FakeSecret("", 30) + "." + safetexttest.FakeSecret("", 25), "eyJ" + safetexttest.FakeSecret("", 20)},
		{"url-credentials", "postgres://app:" + safetexttest.FakeSecret("pw", 14) + "@db.internal:5432/app", safetexttest.FakeSecret("pw", 14)},
		{"generic-secret", `DB_PASSWORD = "` + safetexttest.FakeSecret("x9", 18) + `"`, safetexttest.FakeSecret("x9", 18)},
		// A name that only starts with the keyword (SECRET_KEY, api_token_value).
		{"generic-secret", `SECRET_KEY = '192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf'`, "192b9bdd22ab9ed4d12e236c78afcb9a"},
		{"bearer-token", "curl -H 'Authorization: Bearer " + safetexttest.FakeSecret("t0k", 30) + "'", safetexttest.FakeSecret("t0k", 30)},
	}
	rd := NewRedactor(nil)
	for _, c := range cases {
		out, found := rd.Redact(c.text)
		if strings.Contains(out, c.secret) || found[c.rule] == 0 {
			t.Errorf("%s: %q -> %q (%v)", c.rule, c.text, out, found)
		}
		if !strings.Contains(out, "[REDACTED:") {
			t.Errorf("%s: no marker in %q", c.rule, out)
		}
	}
}

func TestRedactLeavesCodeAlone(t *testing.T) {
	rd := NewRedactor(nil)
	for _, s := range []string{
		`password = os.environ["DB_PASSWORD"]`,
		`token := r.Header.Get("Authorization")`,
		`api_key = settings.OPENAI_API_KEY`,
		`secret: ${{ secrets.DEPLOY_KEY }}`,
		`if token == "" { return errNoToken }`,
		`func (c *Client) SetAPIKey(key string)`,
		`password_reset_token_expiry = 3600`,
		`// the token is verified by verify_signature_and_expiry`,
	} {
		if out, found := rd.Redact(s); out != s {
			t.Errorf("changed ordinary code %q -> %q (%v)", s, out, found)
		}
	}
}

func TestRedactConfiguredValues(t *testing.T) {
	key := "my-very-own-api-key-123"
	rd := NewRedactor([]string{key, "short", "  "})
	out, found := rd.Redact("x=" + key + " and again " + key + " short stays")
	if strings.Contains(out, key) || found["configured-secret"] != 2 || !strings.Contains(out, "short stays") {
		t.Fatalf("%q %v", out, found)
	}
}

func TestDiffRedactorPrivateKeyBlock(t *testing.T) {
	rd := NewRedactor(nil)
	d := rd.NewDiffRedactor()
	lines := []string{
		"const key = `",
		"-----BEGIN RSA PRIVATE KEY-----",
		"MIIEowIBAAKCAQEA" + safetexttest.FakeSecret("", 48),
		safetexttest.FakeSecret("", 64),
		"-----END RSA PRIVATE KEY-----",
		"`",
	}
	var out []string
	for _, l := range lines {
		out = append(out, d.Line(l))
	}
	if out[0] != lines[0] || out[5] != lines[5] {
		t.Fatalf("lines around the key changed: %q", out)
	}
	for _, l := range out[1:5] {
		if l != "[REDACTED:private-key]" {
			t.Fatalf("key line kept: %q", out)
		}
	}
	if d.Counts["private-key"] != 1 || len(out) != len(lines) {
		t.Fatalf("counts %v", d.Counts)
	}
	// A whole block in one string goes too.
	joined := strings.Join(lines, "\n")
	if got := rd.RedactString(joined); strings.Contains(got, lines[3]) {
		t.Fatalf("block kept: %q", got)
	}
}
