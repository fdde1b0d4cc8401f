package githubtest

import (
	"context"
	"net/http"
	"strings"
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
	"pulls/create-reply-for-review-comment":   {perm: "pull_requests", level: "write", fn: (*Server).createReply},
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
