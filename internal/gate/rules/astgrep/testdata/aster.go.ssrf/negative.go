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
