package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/testkit"
)

var (
	formRe     = regexp.MustCompile(`<form id="manifest" method="post" action="([^"]+)">`)
	manifestRe = regexp.MustCompile(`<input type="hidden" name="manifest" value="([^"]+)">`)
)

// aster app setup runs GitHub's App-manifest flow end to end against the fake GitHub (as a
// GitHub Enterprise Server: web at its root, API under /api/v3/): its page posts the manifest
// to GitHub's form, a wrong state is refused, the code is exchanged once through
// POST /app-manifests/{code}/conversions (validated against GitHub's OpenAPI description), the
// key and the secret land in 0600 files, and `aster app serve` starts from them with no flags.
func TestAppSetupManifestFlow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		org      string
		noSecret bool
	}{
		{name: "user"},
		{name: "org without webhook secret", org: "acme", noSecret: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := githubtest.New(t, githubtest.Options{NoWebhookSecret: tc.noSecret})
			dataDir := t.TempDir()
			env := map[string]string{"ASTER_DATA_DIR": dataDir}
			getenv := func(k string) string { return env[k] }
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			pr, pw := io.Pipe()
			args := []string{"app", "setup", "--url", "https://aster.example.com/", "--github-url", fake.WebURL(),
				"--listen", "127.0.0.1:0"}
			if tc.org != "" {
				args = append(args, "--org", tc.org)
			}
			done := make(chan int, 1)
			go func() {
				code := Run(t.Context(), args, IO{Stdin: strings.NewReader(""), Stdout: io.MultiWriter(stdout, pw), Stderr: stderr, Getenv: getenv})
				pw.Close()
				done <- code
			}()
			page := ""
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "http://127.0.0.1:"); ok {
					page = "http://127.0.0.1:" + u
					break
				}
			}
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			if page == "" {
				t.Fatalf("no setup page printed; stdout %q stderr %q", stdout, stderr)
			}
			base := strings.TrimSuffix(page, "/")

			// Another host name pointing here (DNS rebinding) does not get the page.
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, page, nil)
			req.Host = "evil.example:80"
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
				t.Fatalf("page for another host: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}

			resp, err := http.Get(page)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("page: %d %s", resp.StatusCode, body)
			}
			fm, mm := formRe.FindSubmatch(body), manifestRe.FindSubmatch(body)
			if fm == nil || mm == nil {
				t.Fatalf("page has no manifest form:\n%s", body)
			}
			action, err := url.Parse(html.UnescapeString(string(fm[1])))
			if err != nil {
				t.Fatal(err)
			}
			wantPath := "/settings/apps/new"
			if tc.org != "" {
				wantPath = "/organizations/" + tc.org + "/settings/apps/new"
			}
			state := action.Query().Get("state")
			if action.Scheme+"://"+action.Host+"/" != fake.WebURL() || action.Path != wantPath || len(state) < 32 {
				t.Fatalf("form action %s: want %s%s?state=<random>", action, fake.WebURL(), strings.TrimPrefix(wantPath, "/"))
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action "+strings.TrimSuffix(fake.WebURL(), "/")) {
				t.Errorf("page CSP %q does not limit the form to GitHub", csp)
			}
			manifestJSON := html.UnescapeString(string(mm[1]))
			var m github.Manifest
			if err := json.Unmarshal([]byte(manifestJSON), &m); err != nil {
				t.Fatalf("manifest %q: %v", manifestJSON, err)
			}
			if m.HookAttributes.URL != "https://aster.example.com/webhook" || !m.HookAttributes.Active || m.Public ||
				m.RedirectURL != base+"/callback" || m.Name != "Aster aster.example.com" {
				t.Errorf("manifest %+v", m)
			}
			if d := cmp.Diff(github.TokenPermissions(), m.DefaultPermissions); d != "" {
				t.Errorf("manifest permissions (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"pull_request", "issue_comment", "pull_request_review_thread", "pull_request_review_comment"}, m.DefaultEvents); d != "" {
				t.Errorf("manifest events (-want +got):\n%s", d)
			}

			// The browser posts the form to GitHub, which answers with a redirect carrying the code.
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err = noFollow.PostForm(action.String(), url.Values{"manifest": {manifestJSON}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc, err := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("state") != state {
				t.Fatalf("GitHub's answer to the form: %d %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			code := loc.Query().Get("code")

			// A redirect with another state (a page that is not ours) is refused and spends nothing.
			bad := base + "/callback?" + url.Values{"code": {code}, "state": {state[:len(state)-1] + "x"}}.Encode()
			if resp, err := http.Get(bad); err != nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("callback with a wrong state: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			if resp, err := http.Get(base + "/callback?code=" + code); err != nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("callback without a state: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			for _, r := range fake.Requests() {
				if r.Operation == "apps/create-from-manifest" {
					t.Fatalf("a refused callback exchanged the code: %+v", r)
				}
			}

			resp, err = http.Get(loc.String())
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			install := fake.WebURL() + "apps/aster-test/installations/new"
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), install) {
				t.Fatalf("callback: %d %s", resp.StatusCode, body)
			}
			if exit := <-done; exit != 0 {
				t.Fatalf("aster app setup: exit %d; stdout %q stderr %q", exit, stdout, stderr)
			}
			out := stdout.String()
			if !strings.Contains(out, "Created the GitHub App aster-test (id 4242)") || !strings.Contains(out, install) ||
				!strings.Contains(out, "aster app serve") {
				t.Errorf("setup output:\n%s", out)
			}

			apps := fake.CreatedApps()
			if len(apps) != 1 || !apps[0].Converted || apps[0].Org != tc.org {
				t.Fatalf("apps created on the fake: %+v", apps)
			}
			secret := apps[0].WebhookSecret
			if tc.noSecret {
				secret = fake.HookSecret() // none came back: aster set one as the App
			}
			if len(secret) < 32 {
				t.Fatalf("webhook secret %q", secret)
			}
			for _, s := range []string{"PRIVATE KEY", secret} {
				if strings.Contains(out, s) || strings.Contains(stderr.String(), s) {
					t.Errorf("setup printed a secret (%q)", s)
				}
			}
			for name, want := range map[string]string{
				config.AppPrivateKeyFile: string(fake.PrivateKeyPEM()), config.AppWebhookSecretFile: secret + "\n",
			} {
				p := filepath.Join(dataDir, name)
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
				}
				if b, _ := os.ReadFile(p); string(b) != want {
					t.Errorf("%s does not hold what GitHub returned", name)
				}
			}

			// The code was good once.
			_, err = github.ConvertManifest(t.Context(), github.ConvertOptions{APIURL: fake.URL(), Code: code})
			if !errors.Is(err, github.ErrNotFound) {
				t.Errorf("second exchange of the code: %v, want not found", err)
			}
			// Setting up again over the stored App is refused before anything is served.
			if exit, _, serr := runEnv(t, getenv, args...); exit != ExitUsage || !strings.Contains(serr, "already set up") {
				t.Errorf("second setup: %d %q", exit, serr)
			}

			// aster app serve, with no App flags, finds the App: it authenticates to the fake
			// with the stored key (GET /app as the App) and answers /healthz.
			cfg, err := config.Load("", getenv)
			if err != nil {
				t.Fatal(err)
			}
			ac, err := cfg.AppSection(getenv)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := ac.ApplyRegistration(); !ok || err != nil {
				t.Fatalf("registration not applied: %v %v", ok, err)
			}
			set, err := ac.Parse()
			if err != nil {
				t.Fatal(err)
			}
			if set.AppID != fake.AppID() || set.GitHubAPIURL != fake.URL() {
				t.Fatalf("serve settings from the registration: id %d api %s", set.AppID, set.GitHubAPIURL)
			}
			key, _ := os.ReadFile(set.PrivateKeyFile)
			gh, err := github.NewApp(github.AppOptions{AppID: set.AppID, PrivateKey: key, BaseURL: set.GitHubAPIURL})
			if err != nil {
				t.Fatal(err)
			}
			if login, err := gh.BotLogin(t.Context()); err != nil || login != fake.BotLogin() {
				t.Fatalf("the stored key does not authenticate as the App: %q %v", login, err)
			}
			serveFromRegistration(t, getenv, fake)
		})
	}
}

// serveFromRegistration starts `aster app serve` with no App flags and checks it came up
// as the registered App.
func serveFromRegistration(t *testing.T, getenv func(string) string, fake *githubtest.Server) {
	t.Helper()
	addr := testkit.FreeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--log-format", "json", "app", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "a.db"),
			"--sandbox-url", "http://127.0.0.1:1"}, IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: getenv})
	}()
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case code := <-done:
			t.Fatalf("aster app serve exited %d: %s", code, stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("aster app serve: exit %d: %s", code, stderr)
	}
	var started map[string]any
	for line := range strings.Lines(stderr.String()) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "aster app starting" {
			started = rec
		}
	}
	if started == nil || started["app_id"] != float64(fake.AppID()) || started["github"] != fake.URL() {
		t.Fatalf("aster app serve did not start as the registered App: %v\n%s", started, stderr)
	}
}

func runEnv(t *testing.T, getenv func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb syncBuffer
	code := Run(t.Context(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv})
	return code, out.String(), errb.String()
}
