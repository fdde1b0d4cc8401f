package web

import "net/http"

func Login(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/home", http.StatusFound)
	http.Redirect(w, r, "/items/"+r.URL.Query().Get("id"), http.StatusFound)
}

func Elsewhere(base string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, base+r.URL.Path, http.StatusTemporaryRedirect)
	}
}
