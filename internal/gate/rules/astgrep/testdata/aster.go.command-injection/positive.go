package tools

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
)

func Ping(w http.ResponseWriter, r *http.Request) {
	// ruleid: aster.go.command-injection
	out, _ := exec.Command("sh", "-c", "ping -c 1 "+r.URL.Query().Get("host")).Output()
	w.Write(out)
}

func Archive(ctx context.Context, name string) error {
	// ruleid: aster.go.command-injection
	return exec.CommandContext(ctx, "/bin/bash", "-c", fmt.Sprintf("tar czf %s.tgz data", name)).Run()
}
