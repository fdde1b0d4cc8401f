package web

import (
	"fmt"
	"html"
	"html/template"
	"net/http"
)

const banner = template.HTML("<b>static</b>")

func Search(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "<h1>Results for %s</h1>", html.EscapeString(r.URL.Query().Get("q")))
	fmt.Fprintf(w, "results: %d\n", 3)
}
