package files

import (
	"net/http"
	"os"
	"path/filepath"
)

func Download(w http.ResponseWriter, r *http.Request) {
	// ruleid: aster.go.path-traversal
	http.ServeFile(w, r, filepath.Join("/srv/files", r.URL.Query().Get("name")))
}

func Read(w http.ResponseWriter, r *http.Request) {
	name := r.FormValue("file")
	// ruleid: aster.go.path-traversal
	b, err := os.ReadFile(filepath.Join("/srv/data", name))
	if err != nil {
		return
	}
	w.Write(b)
}
