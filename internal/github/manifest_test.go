package github_test

import (
	"encoding/json"
	"os"
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
	if diff := cmp.Diff([]string{"pull_request", "issue_comment"}, m.DefaultEvents); diff != "" {
		t.Errorf("manifest events (-want +got):\n%s", diff)
	}
	if m.Public || m.HookAttributes.URL == "" {
		t.Errorf("manifest must be private with a webhook URL: %+v", m)
	}
}
