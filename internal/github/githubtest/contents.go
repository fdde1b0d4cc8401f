package githubtest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
