package githubtest

import (
	"net/http"
)

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
