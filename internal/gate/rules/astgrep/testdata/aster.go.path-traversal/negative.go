package files

import (
	"net/http"
	"os"
)

func Config(w http.ResponseWriter, r *http.Request) {
	b, _ := os.ReadFile("/etc/app/config.json")
	w.Write(b)
}

func Rooted(w http.ResponseWriter, r *http.Request) {
	root, err := os.OpenRoot("/srv/files")
	if err != nil {
		return
	}
	f, err := root.Open(r.URL.Query().Get("name"))
	if err == nil {
		f.Close()
	}
}
