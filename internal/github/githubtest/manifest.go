package githubtest

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The App-manifest flow on the fake: the web page a browser posts the manifest to
// (/settings/apps/new, /organizations/{org}/settings/apps/new), which "creates" the fake's App
// and redirects to the manifest's redirect_url with a one-time code, and the API operation that
// exchanges the code (apps/create-from-manifest), matched and validated against the OpenAPI
// description like every other, its answer checked against the description's response schema.

// CreatedApp is an App created on the fake through the manifest flow.
type CreatedApp struct {
	Manifest      map[string]any // as posted
	Org           string         // "" for a user's App
	State         string         // the state the form was posted with
	Code          string
	WebhookSecret string // as returned by the conversion ("" until then, or when NoWebhookSecret)
	Converted     bool
}

// manifestFields are the keys GitHub documents for a manifest; others are refused, so a typo
// is caught.
var manifestFields = []string{"name", "url", "description", "hook_attributes", "redirect_url", "callback_urls",
	"setup_url", "public", "default_permissions", "default_events", "setup_on_update", "request_oauth_on_install"}

// WebURL is the fake's web root (GitHub Enterprise Server's layout: the API is WebURL + "api/v3/").
func (s *Server) WebURL() string { return s.srv.URL + "/" }

// CreatedApps returns the Apps created through the manifest flow.
func (s *Server) CreatedApps() []CreatedApp {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CreatedApp
	for _, a := range s.created {
		out = append(out, *a)
	}
	return out
}

// HookSecret is the webhook secret last set through PATCH /app/hook/config.
func (s *Server) HookSecret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hookSecret
}

// serveNewApp is GitHub's "new App from a manifest" page, reduced to what a browser posting
// the manifest sees: a redirect to the manifest's redirect_url with ?code and ?state.
func (s *Server) serveNewApp(w http.ResponseWriter, r *http.Request) {
	s.record(Request{Method: r.Method, Path: r.URL.Path, Operation: "web/new-app-from-manifest", Status: http.StatusFound, Auth: "none"})
	org := r.PathValue("org")
	if err := r.ParseForm(); err != nil || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		s.reject(w, http.StatusBadRequest, "new App: want a form post (application/x-www-form-urlencoded): %v", err)
		return
	}
	raw := r.PostForm.Get("manifest")
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		s.reject(w, http.StatusUnprocessableEntity, "new App: the manifest field is not a JSON object: %v", err)
		return
	}
	for k := range m {
		if !slices.Contains(manifestFields, k) {
			s.reject(w, http.StatusUnprocessableEntity, "new App: unknown manifest key %q", k)
			return
		}
	}
	str := func(k string) string { v, _ := m[k].(string); return v }
	name := str("name")
	if name == "" || len([]rune(name)) > 34 {
		s.reject(w, http.StatusUnprocessableEntity, "new App: name %q: want 1 to 34 characters", name)
		return
	}
	for _, k := range []string{"url", "redirect_url"} {
		if u, err := url.Parse(str(k)); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			s.reject(w, http.StatusUnprocessableEntity, "new App: %s %q is not an http(s) URL", k, str(k))
			return
		}
	}
	hook, _ := m["hook_attributes"].(map[string]any)
	if hu, _ := hook["url"].(string); hu == "" {
		s.reject(w, http.StatusUnprocessableEntity, "new App: hook_attributes.url is required for a webhook")
		return
	}
	perms := map[string]string{}
	rawPerms, _ := m["default_permissions"].(map[string]any)
	for k, v := range rawPerms {
		lvl, _ := v.(string)
		if lvl != "read" && lvl != "write" && lvl != "admin" {
			s.reject(w, http.StatusUnprocessableEntity, "new App: permission %s: level %v", k, v)
			return
		}
		perms[k] = lvl
	}
	// The fake's App has exactly AppPermissions; a manifest asking for other ones would
	// create an App the rest of the fake does not describe.
	if !maps.Equal(perms, AppPermissions()) {
		s.reject(w, http.StatusUnprocessableEntity, "new App: default_permissions %v differ from the App's %v", perms, AppPermissions())
		return
	}
	events, _ := m["default_events"].([]any)
	for _, e := range events {
		if e == "installation" {
			s.reject(w, http.StatusUnprocessableEntity, "new App: default_events: installation is not an event an App subscribes to")
			return
		}
	}
	if pub, ok := m["public"].(bool); !ok || pub {
		s.reject(w, http.StatusUnprocessableEntity, "new App: public must be false for a self-hosted App (got %v)", m["public"])
		return
	}
	code := strings.ToLower(randomString(20))
	state := r.URL.Query().Get("state")
	s.mu.Lock()
	s.created = append(s.created, &CreatedApp{Manifest: m, Org: org, State: state, Code: code})
	s.mu.Unlock()
	to, _ := url.Parse(str("redirect_url"))
	q := to.Query()
	q.Set("code", code)
	if state != "" {
		q.Set("state", state)
	}
	to.RawQuery = q.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// convertManifest is POST /app-manifests/{code}/conversions: the code is good once.
func (s *Server) convertManifest(w http.ResponseWriter, req *apiRequest) {
	code := req.params["code"]
	s.mu.Lock()
	var app *CreatedApp
	for _, a := range s.created {
		if a.Code == code && !a.Converted {
			app = a
		}
	}
	if app != nil {
		app.Converted = true
		if !s.opts.NoWebhookSecret {
			app.WebhookSecret = randomString(40)
		}
	}
	s.mu.Unlock()
	if app == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	str := func(k string) string { v, _ := app.Manifest[k].(string); return v }
	owner := "aster-owner"
	if app.Org != "" {
		owner = app.Org
	}
	now := time.Now().UTC().Format(time.RFC3339)
	var secret any
	if app.WebhookSecret != "" {
		secret = app.WebhookSecret
	}
	body := map[string]any{
		"id": s.opts.AppID, "slug": s.opts.AppSlug, "node_id": "A_fake" + s.opts.AppSlug, "client_id": "Iv1.fake" + randomString(8),
		"owner": s.fullAccount(owner), "name": str("name"), "description": str("description"),
		"external_url": str("url"), "html_url": s.WebURL() + "apps/" + s.opts.AppSlug,
		"created_at": now, "updated_at": now, "permissions": AppPermissions(), "events": app.Manifest["default_events"],
		"client_secret": randomString(40), "webhook_secret": secret, "pem": string(s.PrivateKeyPEM()),
	}
	s.writeValidated(w, req, http.StatusCreated, body)
}

// updateHookConfig is PATCH /app/hook/config (as the App): only the secret is kept.
func (s *Server) updateHookConfig(w http.ResponseWriter, req *apiRequest) {
	var in struct {
		Secret *string `json:"secret"`
	}
	if err := json.Unmarshal(req.body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	s.mu.Lock()
	if in.Secret != nil {
		s.hookSecret = *in.Secret
	}
	s.mu.Unlock()
	s.writeValidated(w, req, http.StatusOK, map[string]any{"content_type": "json", "insecure_ssl": "0", "url": "https://aster.invalid/webhook"})
}

// writeValidated answers with v after checking it against the operation's response schema.
func (s *Server) writeValidated(w http.ResponseWriter, req *apiRequest, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if err := s.spec.ValidateResponse(req.op, status, buf.Bytes()); err != nil {
		s.t.Errorf("githubtest: the fake's own answer breaks the description: %v", err)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fullAccount is an account with every field of the description's simple-user.
func (s *Server) fullAccount(login string) map[string]any {
	base := s.WebURL() + login
	api := s.URL() + "users/" + login
	typ := "User"
	return map[string]any{
		"login": login, "id": len(login), "node_id": "U_" + login, "avatar_url": base + ".png", "gravatar_id": "",
		"url": api, "html_url": base, "followers_url": api + "/followers", "following_url": api + "/following{/other_user}",
		"gists_url": api + "/gists{/gist_id}", "starred_url": api + "/starred{/owner}{/repo}",
		"subscriptions_url": api + "/subscriptions", "organizations_url": api + "/orgs", "repos_url": api + "/repos",
		"events_url": api + "/events{/privacy}", "received_events_url": api + "/received_events", "type": typ,
		"site_admin": false,
	}
}
