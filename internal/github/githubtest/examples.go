package githubtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"

	"github.com/asterhq/aster/internal/github"
)

// WebhookExample is one of GitHub's published example payloads (@octokit/webhooks-examples).
type WebhookExample struct {
	Event  string // X-GitHub-Event
	Action string // "" for events without actions
	Index  int    // position among the event's examples
	Body   []byte // the payload, re-encoded compactly
}

var loadExamples = sync.OnceValues(func() (map[string][]WebhookExample, error) {
	dir, err := DataDir()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "webhooks-examples", "api.github.com", "index.json"))
	if err != nil {
		return nil, err
	}
	var index []struct {
		Name     string            `json:"name"`
		Examples []json.RawMessage `json:"examples"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, err
	}
	out := map[string][]WebhookExample{}
	for _, ev := range index {
		for i, ex := range ev.Examples {
			var head struct {
				Action string `json:"action"`
			}
			_ = json.Unmarshal(ex, &head)
			var buf bytes.Buffer
			if err := json.Compact(&buf, ex); err != nil {
				return nil, err
			}
			out[ev.Name] = append(out[ev.Name], WebhookExample{Event: ev.Name, Action: head.Action, Index: i, Body: buf.Bytes()})
		}
	}
	return out, nil
})

// RequireData skips the test when the octokit packages are not installed, or fails it under CI
// (CI=true), where scripts/fetch-test-deps.sh has always run.
func RequireData(t TB) {
	t.Helper()
	if _, err := DataDir(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("githubtest: %v", err)
		}
		t.Skipf("githubtest: %v", err)
	}
}

// WebhookExamples returns GitHub's example payloads for event (e.g. "pull_request").
func WebhookExamples(t TB, event string) []WebhookExample {
	t.Helper()
	RequireData(t)
	all, err := loadExamples()
	if err != nil {
		t.Fatalf("githubtest: load webhook examples: %v", err)
	}
	ex := all[event]
	if len(ex) == 0 {
		t.Fatalf("githubtest: no webhook examples for %q", event)
	}
	return ex
}

// WebhookEvents lists the events that have examples.
func WebhookEvents(t TB) []string {
	t.Helper()
	RequireData(t)
	all, err := loadExamples()
	if err != nil {
		t.Fatalf("githubtest: load webhook examples: %v", err)
	}
	var names []string
	for name := range all {
		names = append(names, name)
	}
	return names
}

// DeliveryRequest builds the POST GitHub would send for a delivery, signed with secret.
func DeliveryRequest(secret []byte, event, deliveryID string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "GitHub-Hookshot/aster-test")
	r.Header.Set(github.EventHeader, event)
	r.Header.Set(github.DeliveryHeader, deliveryID)
	r.Header.Set(github.SignatureHeader, github.Sign(secret, body))
	return r
}

// CompleteReviewComment adds to the comment of a pull_request_review_comment example the
// fields GitHub's webhook schema now requires and the older published examples lack (the
// comment's line and side, its reactions), the comment on line of the new side. Fields the
// example has are kept.
func CompleteReviewComment(c map[string]any, line int) {
	for k, v := range map[string]any{"start_line": nil, "original_start_line": nil, "start_side": nil,
		"line": float64(line), "original_line": float64(line), "side": "RIGHT"} {
		if _, ok := c[k]; !ok {
			c[k] = v
		}
	}
	if _, ok := c["reactions"]; !ok {
		reactions := map[string]any{"url": c["url"]}
		for _, k := range []string{"total_count", "+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket"} {
			reactions[k] = float64(0)
		}
		c["reactions"] = reactions
	}
}
