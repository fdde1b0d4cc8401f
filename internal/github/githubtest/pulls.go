package githubtest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

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
