package github

import "regexp"

// secretPattern matches what must never leave this package in an error or a log line: GitHub
// tokens of every kind, PEM blocks (the App private key), and token-bearing query parameters.
var secretPattern = regexp.MustCompile(
	`(?:gh[pousr]_[A-Za-z0-9_]{8,}|github_pat_[A-Za-z0-9_]{8,}` +
		`|-----BEGIN[^-]*-----[\s\S]*?(?:-----END[^-]*-----|$)` +
		`|(?i:(?:access_token|token|jwt|sig)=)[^&\s"']+` +
		`|(?i:bearer|token) [A-Za-z0-9._~+/=-]{16,})`)

// redactText replaces anything secret-shaped in s with "[redacted]".
func redactText(s string) string {
	return secretPattern.ReplaceAllString(s, "[redacted]")
}
