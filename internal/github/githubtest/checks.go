package githubtest

import (
	"encoding/json"
	"net/http"
	"strconv"
)

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
