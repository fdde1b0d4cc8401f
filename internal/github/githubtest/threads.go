package githubtest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Thread is a review thread on the fake: an inline comment and its replies.
type Thread struct {
	ID         string // the GraphQL node id
	Resolved   bool
	ResolvedBy string
	Comments   []Comment // the first opens the thread; replies follow, oldest first
}

// nodeID is a GraphQL global id of the fake's shape (GitHub's are opaque too).
func nodeID(prefix string, id int64) string { return prefix + "fake" + strconv.FormatInt(id, 10) }

// threadsOf returns the review threads of a pull request, in the order they were opened.
// The caller holds s.mu.
func threadsOf(rs *repoState, number int) []Thread {
	var out []Thread
	at := map[int64]int{}
	for _, c := range rs.reviewComments {
		if c.Number != number {
			continue
		}
		if c.InReplyTo == 0 {
			by, resolved := rs.resolved[c.ID]
			at[c.ID] = len(out)
			out = append(out, Thread{ID: nodeID("PRRT_", c.ID), Resolved: resolved, ResolvedBy: by, Comments: []Comment{c}})
			continue
		}
		if i, ok := at[c.InReplyTo]; ok {
			out[i].Comments = append(out[i].Comments, c)
		}
	}
	return out
}

// Threads returns the review threads of a pull request, in the order they were opened.
func (s *Server) Threads(owner, name string, number int) []Thread {
	s.mu.Lock()
	defer s.mu.Unlock()
	return threadsOf(s.repo(owner, name), number)
}

// ResolveThread marks the thread opened by comment id resolved by user, as a person
// clicking "Resolve conversation" does.
func (s *Server) ResolveThread(owner, name string, id int64, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, name).resolved[id] = user
}

// setResolved resolves or unresolves the thread with GraphQL id for the App, in a
// repository the token may see.
func (s *Server) setResolved(grant TokenGrant, id string, resolve bool, by string) (Thread, error) {
	root, err := strconv.ParseInt(strings.TrimPrefix(id, "PRRT_fake"), 10, 64)
	if err != nil || !strings.HasPrefix(id, "PRRT_fake") {
		return Thread{}, &gqlNotFound{msg: fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for full, rs := range s.repos {
		if !containsFold(s.installed, full) || (len(grant.Repositories) > 0 && !containsFold(grant.Repositories, rs.Name)) {
			continue
		}
		i := slices.IndexFunc(rs.reviewComments, func(c Comment) bool { return c.ID == root && c.InReplyTo == 0 })
		if i < 0 {
			continue
		}
		if resolve {
			rs.resolved[root] = by
		} else {
			delete(rs.resolved, root)
		}
		for _, t := range threadsOf(rs, rs.reviewComments[i].Number) {
			if t.ID == id {
				return t, nil
			}
		}
	}
	return Thread{}, &gqlNotFound{msg: fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id)}
}

// createReply answers POST .../pulls/{pull_number}/comments/{comment_id}/replies: a reply
// joins the thread of the comment it answers (GitHub keeps threads one level deep).
func (s *Server) createReply(w http.ResponseWriter, req *apiRequest) {
	pr, ok := s.pull(w, req)
	if !ok {
		return
	}
	body, ok := commentBody(w, req.body)
	if !ok {
		return
	}
	id, _ := strconv.ParseInt(req.params["comment_id"], 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(req.repo.reviewComments, func(c Comment) bool { return c.ID == id && c.Number == pr.Number })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	to := req.repo.reviewComments[i]
	root := to.ID
	if to.InReplyTo != 0 {
		root = to.InReplyTo
	}
	c := Comment{ID: s.newID(), Number: pr.Number, Author: s.BotLogin(), Body: body, Path: to.Path, Line: to.Line,
		Side: to.Side, CommitID: to.CommitID, InReplyTo: root}
	req.repo.reviewComments = append(req.repo.reviewComments, c)
	writeJSON(w, http.StatusCreated, s.reviewCommentJSON(c))
}
