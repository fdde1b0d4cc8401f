package tools

import (
	"net/http"
	"os/exec"
)

func Ping(w http.ResponseWriter, r *http.Request) {
	out, _ := exec.Command("ping", "-c", "1", r.URL.Query().Get("host")).Output()
	w.Write(out)
}

func Clean() error {
	return exec.Command("sh", "-c", "rm -rf build && mkdir build").Run()
}
