// Package github is Aster's GitHub-facing edge: it verifies and parses App webhooks into small
// typed events, talks to the REST API as a repository-scoped App installation (with retries on
// rate limits and 5xx), and holds the pure posting rules (fingerprint markers, the inline-comment cap,
// annotation batches, the summary marker) so a re-run never repeats itself.
package github
