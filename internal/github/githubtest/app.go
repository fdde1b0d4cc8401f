package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/github"
)

func (s *Server) getApp(w http.ResponseWriter, req *apiRequest) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.opts.AppID, "slug": s.opts.AppSlug, "name": s.opts.AppSlug,
		"owner": s.account("aster-owner"), "permissions": AppPermissions(),
		"events": github.ManifestEvents(),
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
