package githubtest

import (
	"slices"
	"strings"
	"time"
)

// Repository is a repository on the fake, backed by a real git repository.
type Repository struct {
	Owner, Name   string
	Git           *GitRepo
	DefaultBranch string // default "main"
	Private       bool
}

// PullRequest is a pull request on the fake. Base and head are commits of the base
// repository's git (GitHub keeps a fork's commits reachable there as refs/pull/N/head).
type PullRequest struct {
	Number           int
	Title, Body      string
	Author           string // default "octocat"
	Draft            bool
	BaseRef, BaseSHA string
	HeadRef, HeadSHA string
	// HeadOwner/HeadName name the fork the head branch lives in; empty for a same-repo PR.
	HeadOwner, HeadName string
}

// Comment is a comment on the fake: a review's inline comment or a conversation comment.
type Comment struct {
	ID       int64
	Number   int // pull request
	Author   string
	Body     string
	Path     string // inline comments only
	Line     int
	Side     string
	Start    int
	CommitID string
	ReviewID int64
	// InReplyTo is the first comment of the thread an inline reply belongs to; 0 for the
	// comment that opens a thread and for conversation comments.
	InReplyTo int64
}

// Review is a review posted to the fake.
type Review struct {
	ID       int64
	Number   int
	Author   string
	Event    string // as sent: COMMENT, APPROVE, REQUEST_CHANGES, or "" (pending)
	State    string
	Body     string
	CommitID string
	Comments []Comment
}

// CheckRun is a check run posted to the fake.
type CheckRun struct {
	ID          int64
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	ExternalID  string
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
	Requests    int // create + updates
}

// Annotation is one check-run annotation as received.
type Annotation struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Level     string `json:"annotation_level"`
	Title     string `json:"title,omitempty"`
	Message   string `json:"message"`
}

type repoState struct {
	Repository
	id             int64
	pulls          map[int]*PullRequest
	permissions    map[string]string // user → admin, maintain, write, triage, read
	reviewComments []Comment
	issueComments  []Comment
	reviews        []Review
	checkRuns      []*CheckRun
	// resolved holds the resolved review threads: the id of the thread's first comment →
	// who resolved it.
	resolved map[int64]string
}

func fullName(owner, name string) string { return owner + "/" + name }

// AddRepo puts a repository on the fake and in the App's installation.
func (s *Server) AddRepo(r Repository) {
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	full := fullName(r.Owner, r.Name)
	s.repos[full] = &repoState{Repository: r, id: s.newID(), pulls: map[int]*PullRequest{}, permissions: map[string]string{},
		resolved: map[int64]string{}}
	s.installed = append(s.installed, full)
}

func (s *Server) repo(owner, name string) *repoState {
	rs := s.repos[fullName(owner, name)]
	if rs == nil {
		s.t.Fatalf("githubtest: no repository %s/%s (call AddRepo first)", owner, name)
	}
	return rs
}

// AddPullRequest opens a pull request on a repository added with AddRepo.
func (s *Server) AddPullRequest(owner, name string, pr PullRequest) {
	if pr.Author == "" {
		pr.Author = "octocat"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repo(owner, name)
	cp := pr
	rs.pulls[pr.Number] = &cp
}

// SetPermission gives user a role on the repository: admin, maintain, write, triage or read.
func (s *Server) SetPermission(owner, name, user, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, name).permissions[user] = role
}

// AddIssueComment seeds a conversation comment and returns its id.
func (s *Server) AddIssueComment(owner, name string, number int, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Comment{ID: s.newID(), Number: number, Author: author, Body: body}
	rs := s.repo(owner, name)
	rs.issueComments = append(rs.issueComments, c)
	return c.ID
}

// AddReviewComment seeds an inline comment and returns its id.
func (s *Server) AddReviewComment(owner, name string, c Comment) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.ID = s.newID()
	rs := s.repo(owner, name)
	rs.reviewComments = append(rs.reviewComments, c)
	return c.ID
}

// Reviews returns the reviews on a pull request, oldest first.
func (s *Server) Reviews(owner, name string, number int) []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Review
	for _, r := range s.repo(owner, name).reviews {
		if r.Number == number {
			r.Comments = slices.Clone(r.Comments)
			out = append(out, r)
		}
	}
	return out
}

// ReviewComments returns the inline comments on a pull request, oldest first.
func (s *Server) ReviewComments(owner, name string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofPull(s.repo(owner, name).reviewComments, number, commentNumber)
}

// IssueComments returns the conversation comments on a pull request, oldest first.
func (s *Server) IssueComments(owner, name string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofPull(s.repo(owner, name).issueComments, number, commentNumber)
}

// ofPull returns the items of all that belong to pull request number, in order.
func ofPull[T any](all []T, number int, numberOf func(T) int) []T {
	var out []T
	for _, it := range all {
		if numberOf(it) == number {
			out = append(out, it)
		}
	}
	return out
}

func commentNumber(c Comment) int { return c.Number }
func reviewNumber(r Review) int   { return r.Number }

// CheckRuns returns the check runs of a repository, oldest first.
func (s *Server) CheckRuns(owner, name string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, c := range s.repo(owner, name).checkRuns {
		cp := *c
		cp.Annotations = slices.Clone(c.Annotations)
		out = append(out, cp)
	}
	return out
}

// ExpireTokens makes every issued token expire now, as if an hour had passed.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, g := range s.tokens {
		g.ExpiresAt = time.Now().Add(-time.Second)
		s.tokens[k] = g
	}
}

func roleLevel(role string) (permission string) {
	switch strings.ToLower(role) {
	case "admin":
		return "admin"
	case "maintain", "write":
		return "write"
	case "triage", "read":
		return "read"
	}
	return "none"
}
