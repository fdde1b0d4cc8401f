package github_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/github"
)

// TestManifestMatchesTokenPermissions keeps deploy/github-app-manifest.json, what the App is
// granted, equal to what every installation token asks for.
func TestManifestMatchesTokenPermissions(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/github-app-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		DefaultPermissions map[string]string `json:"default_permissions"`
		DefaultEvents      []string          `json:"default_events"`
		HookAttributes     struct {
			URL string `json:"url"`
		} `json:"hook_attributes"`
		Public bool `json:"public"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(github.TokenPermissions(), m.DefaultPermissions); diff != "" {
		t.Errorf("manifest permissions (-token +manifest):\n%s", diff)
	}
	// installation is delivered to every App without subscribing; GitHub does not accept it here.
	if diff := cmp.Diff([]string{"pull_request", "issue_comment", "pull_request_review_thread", "pull_request_review_comment"}, m.DefaultEvents); diff != "" {
		t.Errorf("manifest events (-want +got):\n%s", diff)
	}
	if m.Public || m.HookAttributes.URL == "" {
		t.Errorf("manifest must be private with a webhook URL: %+v", m)
	}
}

// The manifest `aster app setup` posts is deploy/github-app-manifest.json with the user's
// addresses: the same permissions, events, privacy and description.
func TestNewManifestMatchesDeployFile(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/github-app-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var want github.Manifest
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	got, err := github.NewManifest(github.ManifestOptions{Name: "Aster", PublicURL: "https://aster.example.com/", RedirectURL: "https://aster.example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("manifest (-deploy file +built):\n%s", diff)
	}
	for _, pub := range []string{"https://aster.example.com/webhook", "https://aster.example.com", "https://aster.example.com/webhook/"} {
		m, err := github.NewManifest(github.ManifestOptions{Name: "A", PublicURL: pub, RedirectURL: "http://127.0.0.1:1/callback"})
		if err != nil || m.HookAttributes.URL != "https://aster.example.com/webhook" {
			t.Errorf("public url %q: hook %q %v", pub, m.HookAttributes.URL, err)
		}
	}
	for _, bad := range []github.ManifestOptions{
		{Name: "", PublicURL: "https://a.example", RedirectURL: "http://127.0.0.1:1/"},
		{Name: "this name is far too long for github apps", PublicURL: "https://a.example", RedirectURL: "http://127.0.0.1:1/"},
		{Name: "A", PublicURL: "aster.example.com", RedirectURL: "http://127.0.0.1:1/"},
		{Name: "A", PublicURL: "https://user:pw@a.example", RedirectURL: "http://127.0.0.1:1/"},
		{Name: "A", PublicURL: "https://a.example/?x=1", RedirectURL: "http://127.0.0.1:1/"},
	} {
		if _, err := github.NewManifest(bad); err == nil {
			t.Errorf("NewManifest(%+v) accepted", bad)
		}
	}
}

func TestGitHubURLs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]string{
		"":                                  {"https://github.com/", "https://api.github.com/"},
		"https://github.com":                {"https://github.com/", "https://api.github.com/"},
		"https://api.github.com/":           {"https://github.com/", "https://api.github.com/"},
		"https://ghe.example/":              {"https://ghe.example/", "https://ghe.example/api/v3/"},
		"https://ghe.example":               {"https://ghe.example/", "https://ghe.example/api/v3/"},
		"https://ghe.example/api/v3/":       {"https://ghe.example/", "https://ghe.example/api/v3/"},
		"http://127.0.0.1:8080/":            {"http://127.0.0.1:8080/", "http://127.0.0.1:8080/api/v3/"},
		"https://ghe.example/prefix/api/v3": {"https://ghe.example/prefix/", "https://ghe.example/prefix/api/v3/"},
	} {
		web, api, err := github.GitHubURLs(in)
		if err != nil || web != want[0] || api != want[1] {
			t.Errorf("GitHubURLs(%q) = %q, %q, %v; want %q, %q", in, web, api, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"ghe.example", "ftp://ghe.example/", "https://u:p@ghe.example/", "https://ghe.example/?a=b"} {
		if _, _, err := github.GitHubURLs(bad); err == nil {
			t.Errorf("GitHubURLs(%q) accepted", bad)
		}
	}
	u, err := github.NewAppFormURL("https://ghe.example/", "acme", "s t")
	if err != nil || u != "https://ghe.example/organizations/acme/settings/apps/new?state=s+t" {
		t.Errorf("org form url %q %v", u, err)
	}
	if _, err := github.NewAppFormURL("https://ghe.example/", "../x", "s"); err == nil {
		t.Error("an organization that is not a GitHub name was accepted")
	}
}

// FuzzManifestInputs: whatever a user types as --github-url, --url or a callback's code,
// nothing panics, a derived API root is always under the web root or api.github.com, and a
// code that passes contains only URL-safe characters.
func FuzzManifestInputs(f *testing.F) {
	for _, s := range []string{"", "https://ghe.example/", "https://github.com", "http://[::1]:80/api/v3", "abc123", "a/b?c", "%2e%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if web, api, err := github.GitHubURLs(s); err == nil {
			if api != "https://api.github.com/" && api != web+"api/v3/" {
				t.Fatalf("GitHubURLs(%q) = %q, %q", s, web, api)
			}
		}
		_, _ = github.NewManifest(github.ManifestOptions{Name: s, PublicURL: s, RedirectURL: s})
		if github.ValidManifestCode(s) && strings.ContainsAny(s, "/?#%.") {
			t.Fatalf("code %q passed", s)
		}
	})
}
