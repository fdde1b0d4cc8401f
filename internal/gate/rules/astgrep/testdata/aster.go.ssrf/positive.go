package proxy

import (
	"io"
	"net/http"
)

func Fetch(w http.ResponseWriter, r *http.Request) {
	// ruleid: aster.go.ssrf
	resp, err := http.Get(r.URL.Query().Get("url"))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	io.Copy(w, resp.Body)
}

func Forward(w http.ResponseWriter, r *http.Request) {
	target := r.FormValue("target")
	// ruleid: aster.go.ssrf
	req, _ := http.NewRequestWithContext(r.Context(), "GET", target, nil)
	http.DefaultClient.Do(req)
}
