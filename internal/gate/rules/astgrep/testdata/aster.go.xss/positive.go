package web

import (
	"fmt"
	"html/template"
	"net/http"
)

func Greeting(name string) template.HTML {
	// ruleid: aster.go.xss
	return template.HTML("<b>" + name + "</b>")
}

func Search(w http.ResponseWriter, r *http.Request) {
	// ruleid: aster.go.xss
	fmt.Fprintf(w, "<h1>Results for %s</h1>", r.URL.Query().Get("q"))
}

func Comment(r *http.Request) template.HTML {
	// ruleid: aster.go.xss
	return template.HTML(r.FormValue("body"))
}
