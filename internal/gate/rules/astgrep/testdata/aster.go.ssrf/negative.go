package proxy

import (
	"net/http"
	"net/url"
)

const api = "https://api.example.com/quote"

func Quote(w http.ResponseWriter, r *http.Request) {
	u := api + "?symbol=" + url.QueryEscape("fixed")
	resp, err := http.Get(u)
	if err == nil {
		resp.Body.Close()
	}
}

func Mixed(w http.ResponseWriter, r *http.Request, ts struct{ URL string }) {
	name := r.FormValue("name")
	resp, err := http.Get(ts.URL)
	if err == nil {
		resp.Body.Close()
	}
	w.Write([]byte(name))
}

func Server(newServer func(http.HandlerFunc) struct{ URL string }) {
	ts := newServer(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.URL.Path))
	})
	http.Get(ts.URL)
}
