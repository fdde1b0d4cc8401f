package githubtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

type authKind int

const (
	authToken authKind = iota
	authJWT
	authNone // the request's own content is the credential (a manifest code)
)

type handler struct {
	auth  authKind
	perm  string // installation permission the operation needs
	level string // read or write
	fn    func(*Server, http.ResponseWriter, *apiRequest)
}

// handlers are the operations the fake implements, by operationId. Any other operation of the
// description is refused with 501 and a test failure, so a gap in the fake is never silent.
var handlers = map[string]handler{
	"apps/get-authenticated":                  {auth: authJWT, fn: (*Server).getApp},
	"apps/create-from-manifest":               {auth: authNone, fn: (*Server).convertManifest},
	"apps/update-webhook-config-for-app":      {auth: authJWT, fn: (*Server).updateHookConfig},
	"apps/create-installation-access-token":   {auth: authJWT, fn: (*Server).createToken},
	"pulls/get":                               {perm: "pull_requests", level: "read", fn: (*Server).getPull},
	"repos/compare-commits-with-basehead":     {perm: "contents", level: "read", fn: (*Server).compare},
	"repos/download-tarball-archive":          {perm: "contents", level: "read", fn: (*Server).tarballLink},
	"repos/get-content":                       {perm: "contents", level: "read", fn: (*Server).getContent},
	"repos/get-collaborator-permission-level": {perm: "metadata", level: "read", fn: (*Server).getPermission},
	"pulls/list-review-comments":              {perm: "pull_requests", level: "read", fn: (*Server).listReviewComments},
	"pulls/list-reviews":                      {perm: "pull_requests", level: "read", fn: (*Server).listReviews},
	"pulls/create-review":                     {perm: "pull_requests", level: "write", fn: (*Server).createReview},
	"issues/list-comments":                    {perm: "pull_requests", level: "read", fn: (*Server).listIssueComments},
	"issues/create-comment":                   {perm: "pull_requests", level: "write", fn: (*Server).createIssueComment},
	"issues/update-comment":                   {perm: "pull_requests", level: "write", fn: (*Server).updateIssueComment},
	"checks/create":                           {perm: "checks", level: "write", fn: (*Server).createCheckRun},
	"checks/update":                           {perm: "checks", level: "write", fn: (*Server).updateCheckRun},
	"checks/list-for-ref":                     {perm: "checks", level: "read", fn: (*Server).listCheckRuns},
	"checks/get":                              {perm: "checks", level: "read", fn: (*Server).getCheckRun},
}

func (s *Server) account(login string) map[string]any {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	return map[string]any{"login": login, "id": len(login), "type": typ}
}

// --- App ---------------------------------------------------------------------------------------

func (s *Server) getApp(w http.ResponseWriter, req *apiRequest) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.opts.AppID, "slug": s.opts.AppSlug, "name": s.opts.AppSlug,
		"owner": s.account("aster-owner"), "permissions": AppPermissions(),
		"events": []string{"pull_request", "issue_comment", "installation"},
	})
}

func (s *Server) createToken(w http.ResponseWriter, req *apiRequest) {
	id, _ := strconv.ParseInt(req.params["installation_id"], 10, 64)
	if id != s.opts.InstallationID {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var in struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if len(req.body) > 0 {
		if err := json.Unmarshal(req.body, &in); err != nil {
			writeError(w, http.StatusBadRequest, "Problems parsing JSON")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var repos []map[string]any
	for _, name := range in.Repositories {
		var found *repoState
		for _, full := range s.installed {
			if rs := s.repos[full]; strings.EqualFold(rs.Name, name) {
				found = rs
			}
		}
		if found == nil {
			writeError(w, http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
		repos = append(repos, map[string]any{"id": found.id, "name": found.Name, "full_name": fullName(found.Owner, found.Name)})
	}
	perms := in.Permissions
	if perms == nil {
		perms = AppPermissions()
	}
	for p, lvl := range perms {
		if !allows(AppPermissions()[p], lvl) {
			writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("The permissions requested are not granted to this installation: %s:%s", p, lvl))
			return
		}
	}
	grant := TokenGrant{
		Token:          "ghs_" + randomString(36),
		InstallationID: id,
		Repositories:   slices.Clone(in.Repositories),
		Permissions:    perms,
		ExpiresAt:      time.Now().Add(time.Hour).UTC().Truncate(time.Second),
	}
	s.tokens[grant.Token] = grant
	selection := "all"
	if len(in.Repositories) > 0 {
		selection = "selected"
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"token": grant.Token, "expires_at": grant.ExpiresAt.Format(time.RFC3339),
		"permissions": perms, "repository_selection": selection, "repositories": repos,
	})
}

// --- pull requests, diffs, archives, contents ---------------------------------------------------

func (s *Server) pull(w http.ResponseWriter, req *apiRequest) (*PullRequest, bool) {
	n, _ := strconv.Atoi(req.params["pull_number"])
	if n == 0 {
		n, _ = strconv.Atoi(req.params["issue_number"])
	}
	s.mu.Lock()
	pr := req.repo.pulls[n]
	s.mu.Unlock()
	if pr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return pr, true
}

func (s *Server) repoJSON(owner, name string) map[string]any {
	s.mu.Lock()
	rs := s.repos[fullName(owner, name)]
	s.mu.Unlock()
	id, private, branch := int64(len(owner)*1000+len(name)), false, "main"
	if rs != nil {
		id, private, branch = rs.id, rs.Private, rs.DefaultBranch
	}
	return map[string]any{
		"id": id, "name": name, "full_name": fullName(owner, name), "owner": s.account(owner),
		"private": private, "fork": rs == nil, "default_branch": branch,
		"clone_url": "https://github.invalid/" + fullName(owner, name) + ".git",
	}
}

func wantsDiff(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), ".diff")
}

func (s *Server) getPull(w http.ResponseWriter, req *apiRequest) {
	pr, ok := s.pull(w, req)
	if !ok {
		return
	}
	rs := req.repo
	if wantsDiff(req.r) {
		s.writeDiff(w, req.r.Context(), rs, pr.BaseSHA, pr.HeadSHA)
		return
	}
	stat, err := runGit(req.r.Context(), rs.Git.Dir, nil, "diff", "--numstat", pr.BaseSHA+"..."+pr.HeadSHA)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	files, adds, dels := 0, 0, 0
	for line := range strings.Lines(string(stat)) {
		f := strings.Fields(line)
		if len(f) >= 3 {
			files++
			a, _ := strconv.Atoi(f[0])
			d, _ := strconv.Atoi(f[1])
			adds, dels = adds+a, dels+d
		}
	}
	headOwner, headName := rs.Owner, rs.Name
	if pr.HeadOwner != "" {
		headOwner, headName = pr.HeadOwner, pr.HeadName
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": int64(pr.Number) + rs.id*1000, "number": pr.Number, "state": "open", "title": pr.Title, "body": pr.Body,
		"draft": pr.Draft, "merged": false, "user": s.account(pr.Author),
		"head":          map[string]any{"ref": pr.HeadRef, "sha": pr.HeadSHA, "label": headOwner + ":" + pr.HeadRef, "repo": s.repoJSON(headOwner, headName)},
		"base":          map[string]any{"ref": pr.BaseRef, "sha": pr.BaseSHA, "label": rs.Owner + ":" + pr.BaseRef, "repo": s.repoJSON(rs.Owner, rs.Name)},
		"changed_files": files, "additions": adds, "deletions": dels, "commits": 1,
	})
}

// resolve turns a ref or SHA into a commit SHA of the repository, refusing option-like input.
func resolve(ctx context.Context, rs *repoState, ref string) (string, bool) {
	if ref == "" {
		ref = rs.DefaultBranch
	}
	if strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, " \t\n:^~") {
		return "", false
	}
	out, err := runGit(ctx, rs.Git.Dir, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

func (s *Server) writeDiff(w http.ResponseWriter, ctx context.Context, rs *repoState, base, head string) {
	out, err := runGit(ctx, rs.Git.Dir, nil, "diff", "--no-color", "--no-ext-diff", "--full-index", base+"..."+head)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/vnd.github.diff; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

func (s *Server) compare(w http.ResponseWriter, req *apiRequest) {
	base, head, ok := strings.Cut(req.params["basehead"], "...")
	if !ok {
		base, head, ok = strings.Cut(req.params["basehead"], "..")
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	ctx := req.r.Context()
	b, okB := resolve(ctx, req.repo, base)
	h, okH := resolve(ctx, req.repo, head)
	if !okB || !okH {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if wantsDiff(req.r) {
		s.writeDiff(w, ctx, req.repo, b, h)
		return
	}
	names, err := runGit(ctx, req.repo.Git.Dir, nil, "diff", "--name-status", b+"..."+h)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	var files []map[string]any
	for line := range strings.Lines(string(names)) {
		if f := strings.Fields(line); len(f) >= 2 {
			files = append(files, map[string]any{"filename": f[len(f)-1], "status": f[0]})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ahead", "base_commit": map[string]any{"sha": b}, "files": files,
	})
}

func (s *Server) tarballLink(w http.ResponseWriter, req *apiRequest) {
	sha, ok := resolve(req.r.Context(), req.repo, req.params["ref"])
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	tok := randomString(32)
	s.mu.Lock()
	s.codeload[tok] = archiveGrant{repo: fullName(req.repo.Owner, req.repo.Name), sha: sha, expires: time.Now().Add(5 * time.Minute)}
	s.mu.Unlock()
	loc := fmt.Sprintf("%s%s%s/legacy.tar.gz/%s?token=%s", s.srv.URL, codeloadPrefix,
		fullName(req.repo.Owner, req.repo.Name), sha, tok)
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusFound)
}

// serveCodeload serves archive downloads for links handed out by tarballLink.
func (s *Server) serveCodeload(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, answered: func(status int) {
		s.record(Request{Method: r.Method, Path: r.URL.Path, Status: status, Auth: "link"})
	}}
	defer sw.finish()
	if r.Header.Get("Authorization") != "" {
		s.reject(sw, http.StatusBadRequest, "an archive link was fetched with an Authorization header: credentials leak to the archive host")
		return
	}
	s.mu.Lock()
	g, ok := s.codeload[r.URL.Query().Get("token")]
	var rs *repoState
	if ok {
		rs = s.repos[g.repo]
	}
	s.mu.Unlock()
	want := codeloadPrefix + g.repo + "/legacy.tar.gz/" + g.sha
	if !ok || time.Now().After(g.expires) || r.URL.Path != want || rs == nil {
		writeError(sw, http.StatusNotFound, "Not Found")
		return
	}
	if f := s.faultArchive(sw); f {
		return
	}
	prefix := fmt.Sprintf("%s-%s-%s/", rs.Owner, rs.Name, g.sha[:7])
	var buf bytes.Buffer
	if _, err := runGit(r.Context(), rs.Git.Dir, &buf, "archive", "--format=tar.gz", "--prefix="+prefix, g.sha); err != nil {
		writeError(sw, http.StatusInternalServerError, err.Error())
		return
	}
	sw.Header().Set("Content-Type", "application/x-gzip")
	sw.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	sw.WriteHeader(http.StatusOK)
	_, _ = sw.Write(buf.Bytes())
}

// faultArchive applies a fault injected for the pseudo-operation "codeload".
func (s *Server) faultArchive(w http.ResponseWriter) bool { return s.fault(w, "codeload") }

func (s *Server) getContent(w http.ResponseWriter, req *apiRequest) {
	ctx := req.r.Context()
	sha, ok := resolve(ctx, req.repo, req.r.URL.Query().Get("ref"))
	path := strings.Trim(req.params["path"], "/")
	if !ok || path == "" || strings.HasPrefix(path, "-") || slices.Contains(strings.Split(path, "/"), "..") {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	obj := sha + ":" + path
	typ, err := runGit(ctx, req.repo.Git.Dir, nil, "cat-file", "-t", obj)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if strings.TrimSpace(string(typ)) != "blob" {
		writeJSON(w, http.StatusOK, []any{}) // a directory; the fake lists nothing
		return
	}
	content, err := runGit(ctx, req.repo.Git.Dir, nil, "cat-file", "blob", obj)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	blob, _ := runGit(ctx, req.repo.Git.Dir, nil, "rev-parse", obj)
	enc := base64.StdEncoding.EncodeToString(content)
	var wrapped strings.Builder // GitHub wraps base64 at 60 columns
	for len(enc) > 60 {
		wrapped.WriteString(enc[:60] + "\n")
		enc = enc[60:]
	}
	wrapped.WriteString(enc + "\n")
	name := path[strings.LastIndex(path, "/")+1:]
	writeJSON(w, http.StatusOK, map[string]any{
		"type": "file", "encoding": "base64", "size": len(content), "name": name, "path": path,
		"content": wrapped.String(), "sha": strings.TrimSpace(string(blob)),
	})
}

func (s *Server) getPermission(w http.ResponseWriter, req *apiRequest) {
	user := req.params["username"]
	s.mu.Lock()
	role, ok := req.repo.permissions[user]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found") // GitHub: not a user; the fake: unknown
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"permission": roleLevel(role), "role_name": role, "user": s.account(user)})
}

// --- comments and reviews ------------------------------------------------------------------------

// paginate writes one page of items with GitHub's Link header.
func paginate[T any](w http.ResponseWriter, r *http.Request, items []T) {
	paginateAs(w, r, items, func(page []T) any { return page })
}

// paginateAs is paginate for a listing whose page GitHub wraps in an object.
func paginateAs[T any](w http.ResponseWriter, r *http.Request, items []T, body func(page []T) any) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	start := min((page-1)*per, len(items))
	end := min(start+per, len(items))
	last := max((len(items)+per-1)/per, 1)
	link := func(p int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		u.RawQuery = v.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	writeJSON(w, http.StatusOK, body(items[start:end]))
}

func (s *Server) reviewCommentJSON(c Comment) map[string]any {
	return map[string]any{
		"id": c.ID, "body": c.Body, "path": c.Path, "line": c.Line, "side": c.Side, "commit_id": c.CommitID,
		"pull_request_review_id": c.ReviewID, "user": s.account(c.Author),
	}
}

func (s *Server) listReviewComments(w http.ResponseWriter, req *apiRequest) {
	listForPull(s, w, req, &req.repo.reviewComments, commentNumber, s.reviewCommentJSON)
}

// listForPull answers a list request with the items of *all (read under the lock) that
// belong to the request's pull request, as render shows them, a page at a time.
func listForPull[T any](s *Server, w http.ResponseWriter, req *apiRequest, all *[]T, numberOf func(T) int, render func(T) map[string]any) {
	pr, ok := s.pull(w, req)
	if !ok {
		return
	}
	s.mu.Lock()
	var items []map[string]any
	for _, it := range ofPull(*all, pr.Number, numberOf) {
		items = append(items, render(it))
	}
	s.mu.Unlock()
	paginate(w, req.r, items)
}

func (s *Server) reviewJSON(r Review) map[string]any {
	return map[string]any{"id": r.ID, "body": r.Body, "state": r.State, "commit_id": r.CommitID, "user": s.account(r.Author)}
}

func (s *Server) listReviews(w http.ResponseWriter, req *apiRequest) {
	listForPull(s, w, req, &req.repo.reviews, reviewNumber, s.reviewJSON)
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// diffLines indexes which lines of which file a review comment may sit on: per path, the
// RIGHT-side (new) and LEFT-side (old) line numbers inside the diff's hunks.
func diffLines(diff []byte) map[string]map[string]map[int]bool {
	out := map[string]map[string]map[int]bool{}
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(diff))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "+++ b/"); ok {
			cur = p
			out[cur] = map[string]map[int]bool{"RIGHT": {}, "LEFT": {}}
			continue
		}
		m := hunkHeader.FindStringSubmatch(line)
		if m == nil || cur == "" {
			continue
		}
		span := func(start, count string) (int, int) {
			s, _ := strconv.Atoi(start)
			c := 1
			if count != "" {
				c, _ = strconv.Atoi(count)
			}
			return s, c
		}
		os, oc := span(m[1], m[2])
		ns, nc := span(m[3], m[4])
		for i := range oc {
			out[cur]["LEFT"][os+i] = true
		}
		for i := range nc {
			out[cur]["RIGHT"][ns+i] = true
		}
	}
	return out
}

func (s *Server) createReview(w http.ResponseWriter, req *apiRequest) {
	pr, ok := s.pull(w, req)
	if !ok {
		return
	}
	var in struct {
		CommitID string `json:"commit_id"`
		Body     string `json:"body"`
		Event    string `json:"event"`
		Comments []struct {
			Path      string `json:"path"`
			Position  *int   `json:"position"`
			Body      string `json:"body"`
			Line      int    `json:"line"`
			Side      string `json:"side"`
			StartLine int    `json:"start_line"`
			StartSide string `json:"start_side"`
		} `json:"comments"`
	}
	if err := json.Unmarshal(req.body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if (in.Event == "COMMENT" || in.Event == "REQUEST_CHANGES") && strings.TrimSpace(in.Body) == "" {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: body is required for "+in.Event)
		return
	}
	ctx := req.r.Context()
	commit := pr.HeadSHA
	if in.CommitID != "" {
		sha, ok := resolve(ctx, req.repo, in.CommitID)
		if !ok {
			writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: commit_id is not part of the pull request")
			return
		}
		commit = sha
	}
	diff, err := runGit(ctx, req.repo.Git.Dir, nil, "diff", "--no-color", pr.BaseSHA+"..."+commit)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	lines := diffLines(diff)
	s.mu.Lock()
	defer s.mu.Unlock()
	rev := Review{ID: s.newID(), Number: pr.Number, Author: s.BotLogin(), Event: in.Event, Body: in.Body, CommitID: commit}
	rev.State = map[string]string{"COMMENT": "COMMENTED", "APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "": "PENDING"}[in.Event]
	for _, c := range in.Comments {
		side := c.Side
		if side == "" {
			side = "RIGHT"
		}
		if c.Position != nil || c.Line == 0 {
			writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: the fake wants line/side comments, not positions")
			return
		}
		file := lines[c.Path]
		if file == nil || !file[side][c.Line] || (c.StartLine > 0 && !file[side][c.StartLine]) {
			writeError(w, http.StatusUnprocessableEntity,
				fmt.Sprintf("Unprocessable Entity: Pull request review thread line must be part of the diff (%s:%d %s)", c.Path, c.Line, side))
			return
		}
		rev.Comments = append(rev.Comments, Comment{ID: s.newID(), Number: pr.Number, Author: rev.Author, Body: c.Body,
			Path: c.Path, Line: c.Line, Side: side, Start: c.StartLine, CommitID: commit, ReviewID: rev.ID})
	}
	req.repo.reviews = append(req.repo.reviews, rev)
	req.repo.reviewComments = append(req.repo.reviewComments, rev.Comments...)
	writeJSON(w, http.StatusOK, s.reviewJSON(rev))
}

func (s *Server) issueCommentJSON(c Comment) map[string]any {
	return map[string]any{"id": c.ID, "body": c.Body, "user": s.account(c.Author)}
}

func (s *Server) listIssueComments(w http.ResponseWriter, req *apiRequest) {
	listForPull(s, w, req, &req.repo.issueComments, commentNumber, s.issueCommentJSON)
}

func commentBody(w http.ResponseWriter, body []byte) (string, bool) {
	var in struct {
		Body string `json:"body"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Body == "" {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: body is required")
		return "", false
	}
	return in.Body, true
}

func (s *Server) createIssueComment(w http.ResponseWriter, req *apiRequest) {
	pr, ok := s.pull(w, req)
	if !ok {
		return
	}
	body, ok := commentBody(w, req.body)
	if !ok {
		return
	}
	s.mu.Lock()
	c := Comment{ID: s.newID(), Number: pr.Number, Author: s.BotLogin(), Body: body}
	req.repo.issueComments = append(req.repo.issueComments, c)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, s.issueCommentJSON(c))
}

func (s *Server) updateIssueComment(w http.ResponseWriter, req *apiRequest) {
	id, _ := strconv.ParseInt(req.params["comment_id"], 10, 64)
	body, ok := commentBody(w, req.body)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range req.repo.issueComments {
		if c.ID != id {
			continue
		}
		if c.Author != s.BotLogin() {
			writeError(w, http.StatusForbidden, "Resource not accessible by integration")
			return
		}
		req.repo.issueComments[i].Body = body
		writeJSON(w, http.StatusOK, s.issueCommentJSON(req.repo.issueComments[i]))
		return
	}
	writeError(w, http.StatusNotFound, "Not Found")
}

// --- check runs ----------------------------------------------------------------------------------

type checkRunInput struct {
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion"`
	ExternalID string `json:"external_id"`
	Output     *struct {
		Title       string       `json:"title"`
		Summary     string       `json:"summary"`
		Text        string       `json:"text"`
		Annotations []Annotation `json:"annotations"`
	} `json:"output"`
}

func (s *Server) applyCheckRun(w http.ResponseWriter, run *CheckRun, in checkRunInput) bool {
	if in.Output != nil && len(in.Output.Annotations) > 50 {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: at most 50 annotations per request")
		return false
	}
	if in.Status == "completed" && in.Conclusion == "" {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: conclusion is required when status is completed")
		return false
	}
	if in.Name != "" {
		run.Name = in.Name
	}
	if in.Status != "" {
		run.Status = in.Status
	}
	if in.Conclusion != "" {
		run.Status, run.Conclusion = "completed", in.Conclusion
	}
	if in.ExternalID != "" {
		run.ExternalID = in.ExternalID
	}
	if in.Output != nil {
		run.Title, run.Summary, run.Text = in.Output.Title, in.Output.Summary, in.Output.Text
		run.Annotations = append(run.Annotations, in.Output.Annotations...)
	}
	run.Requests++
	return true
}

func (s *Server) checkRunJSON(run *CheckRun) map[string]any {
	var conclusion any
	if run.Conclusion != "" {
		conclusion = run.Conclusion
	}
	return map[string]any{"id": run.ID, "name": run.Name, "head_sha": run.HeadSHA, "status": run.Status, "conclusion": conclusion,
		"external_id": run.ExternalID, "app": map[string]any{"id": s.opts.AppID, "slug": s.opts.AppSlug},
		"output": map[string]any{"title": run.Title, "summary": run.Summary, "annotations_count": len(run.Annotations)}}
}

// checkRun is the request's check run (check_run_id), or nil after a 404; s.mu is held.
func checkRun(w http.ResponseWriter, req *apiRequest) *CheckRun {
	id, _ := strconv.ParseInt(req.params["check_run_id"], 10, 64)
	for _, run := range req.repo.checkRuns {
		if run.ID == id {
			return run
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return nil
}

func (s *Server) getCheckRun(w http.ResponseWriter, req *apiRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if run := checkRun(w, req); run != nil {
		writeJSON(w, http.StatusOK, s.checkRunJSON(run))
	}
}

// listCheckRuns lists the check runs on a commit, newest first, with GitHub's filters:
// check_name, status, app_id (every run here is the App's) and filter (latest keeps the
// newest run of each name).
func (s *Server) listCheckRuns(w http.ResponseWriter, req *apiRequest) {
	sha, ok := resolve(req.r.Context(), req.repo, req.params["ref"])
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	q := req.r.URL.Query()
	latest := q.Get("filter") != "all"
	s.mu.Lock()
	var items []map[string]any
	seen := map[string]bool{}
	for i := len(req.repo.checkRuns) - 1; i >= 0; i-- {
		run := req.repo.checkRuns[i]
		switch {
		case run.HeadSHA != sha,
			q.Has("check_name") && run.Name != q.Get("check_name"),
			q.Has("status") && run.Status != q.Get("status"),
			q.Has("app_id") && q.Get("app_id") != strconv.FormatInt(s.opts.AppID, 10),
			latest && seen[run.Name]:
			continue
		}
		seen[run.Name] = true
		items = append(items, s.checkRunJSON(run))
	}
	s.mu.Unlock()
	paginateAs(w, req.r, items, func(page []map[string]any) any {
		return map[string]any{"total_count": len(items), "check_runs": page}
	})
}

func (s *Server) createCheckRun(w http.ResponseWriter, req *apiRequest) {
	var in checkRunInput
	if err := json.Unmarshal(req.body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if _, ok := resolve(req.r.Context(), req.repo, in.HeadSHA); !ok || len(in.HeadSHA) < 40 {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: No commit found for SHA: "+in.HeadSHA)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	run := &CheckRun{ID: s.newID(), HeadSHA: in.HeadSHA, Status: "queued"}
	if !s.applyCheckRun(w, run, in) {
		return
	}
	req.repo.checkRuns = append(req.repo.checkRuns, run)
	writeJSON(w, http.StatusCreated, s.checkRunJSON(run))
}

func (s *Server) updateCheckRun(w http.ResponseWriter, req *apiRequest) {
	var in checkRunInput
	if err := json.Unmarshal(req.body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if run := checkRun(w, req); run != nil && s.applyCheckRun(w, run, in) {
		writeJSON(w, http.StatusOK, s.checkRunJSON(run))
	}
}
