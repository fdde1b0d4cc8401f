package web

import "net/http"

func Login(w http.ResponseWriter, r *http.Request) {
	// ruleid: aster.go.open-redirect
	http.Redirect(w, r, r.URL.Query().Get("next"), http.StatusFound)
}

func Back(w http.ResponseWriter, r *http.Request) {
	to := r.FormValue("return_to")
	// ruleid: aster.go.open-redirect
	http.Redirect(w, r, to, http.StatusSeeOther)
}
