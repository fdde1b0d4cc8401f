package githubtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

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
	out := map[string]any{
		"id": c.ID, "body": c.Body, "path": c.Path, "line": c.Line, "side": c.Side, "commit_id": c.CommitID,
		"pull_request_review_id": c.ReviewID, "user": s.account(c.Author),
	}
	if c.InReplyTo != 0 {
		out["in_reply_to_id"] = c.InReplyTo
	}
	return out
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
