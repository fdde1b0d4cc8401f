package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/store"
)

// TestEveryWebhookExample delivers every example payload GitHub publishes
// (@octokit/webhooks-examples), of every event, through the App's endpoint into a real
// store: the ones Aster acts on are stored and queued (202), everything else is answered
// 200 and leaves nothing behind.
func TestEveryWebhookExample(t *testing.T) {
	st, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "aster.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secret := []byte(testSecret)
	metrics := NewMetrics()
	handler, err := NewHandler(HandlerOptions{WebhookSecret: secret, Sink: &Sink{Store: st}, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()

	type peek struct {
		Action       string `json:"action"`
		Installation *struct {
			ID int64 `json:"id"`
		} `json:"installation"`
		Repository *struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
		Number      int `json:"number"`
		PullRequest *struct {
			Number int  `json:"number"`
			Draft  bool `json:"draft"`
		} `json:"pull_request"`
	}
	accepted, ignored := 0, 0
	wantPulls := map[string]bool{}
	wantInstallations := map[int64]bool{}
	events := githubtest.WebhookEvents(t)
	slices.Sort(events)
	for _, event := range events {
		for _, ex := range githubtest.WebhookExamples(t, event) {
			var p peek
			if err := json.Unmarshal(ex.Body, &p); err != nil {
				t.Fatalf("%s #%d: %v", event, ex.Index, err)
			}
			want := http.StatusOK
			switch event {
			case "pull_request":
				if slices.Contains([]string{"opened", "reopened", "synchronize", "ready_for_review"}, p.Action) &&
					p.Installation != nil && !p.PullRequest.Draft {
					want = http.StatusAccepted
					wantPulls[fmt.Sprintf("%s#%d", p.Repository.FullName, p.PullRequest.Number)] = true
				}
			case "installation":
				want = http.StatusAccepted
				wantInstallations[p.Installation.ID] = true
			}
			id := fmt.Sprintf("ex-%s-%d", strings.ReplaceAll(event, "_", "-"), ex.Index)
			got := post(t, srv.URL, secret, event, id, ex.Body)
			if got != want {
				t.Errorf("%s/%s #%d: %d, want %d", event, p.Action, ex.Index, got, want)
			}
			if got == http.StatusAccepted {
				accepted++
			} else {
				ignored++
			}
		}
	}
	// A /aster review comment, made from GitHub's issue_comment example.
	var m map[string]any
	for _, ex := range githubtest.WebhookExamples(t, "issue_comment") {
		if ex.Action == "created" {
			_ = json.Unmarshal(ex.Body, &m)
			break
		}
	}
	m["comment"].(map[string]any)["body"] = "/aster review"
	m["issue"].(map[string]any)["pull_request"] = map[string]any{"url": "https://api.github.com/repos/x/y/pulls/1"}
	m["sender"].(map[string]any)["type"] = "User"
	m["installation"] = map[string]any{"id": 1}
	wantPulls[fmt.Sprintf("%s#%v", m["repository"].(map[string]any)["full_name"], m["issue"].(map[string]any)["number"])] = true
	body, _ := json.Marshal(m)
	if got := post(t, srv.URL, secret, "issue_comment", "ex-command", body); got != http.StatusAccepted {
		t.Fatalf("/aster review comment: %d, want 202", got)
	}
	accepted++

	ctx := context.Background()
	counts, err := st.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Deliveries != int64(accepted) {
		t.Errorf("deliveries stored: %d, want %d (the accepted ones only)", counts.Deliveries, accepted)
	}
	if counts.Installations != int64(len(wantInstallations)) {
		t.Errorf("installations: %d, want %d", counts.Installations, len(wantInstallations))
	}
	if counts.Pulls != int64(len(wantPulls)) {
		t.Errorf("pull requests: %d, want %d", counts.Pulls, len(wantPulls))
	}
	jobs, err := st.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != len(wantPulls) {
		t.Errorf("jobs: %d, want one per pull request (%d)", len(jobs), len(wantPulls))
	}
	t.Logf("%d events, %d deliveries accepted, %d ignored; %d pull requests queued", len(events), accepted, ignored, len(jobs))

	var mb bytes.Buffer
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = mb.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(mb.String(), `aster_app_webhook_deliveries_total{event="other",result="ignored"}`) {
		t.Errorf("ignored deliveries are not counted:\n%s", mb.String())
	}
}

func post(t *testing.T, url string, secret []byte, event, id string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/webhook", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(github.EventHeader, event)
	req.Header.Set(github.DeliveryHeader, id)
	req.Header.Set(github.SignatureHeader, github.Sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
