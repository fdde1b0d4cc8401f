package main_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
)

// A user who is not root meets the runtimes' first refusals with what to do: the Docker
// socket names root and the docker group, oci and gvisor say they need root and offer
// docker. The real binary runs as uid 65534 (the test needs root to switch to it).
func TestNonRootRefusalsSayWhatToDo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the binary as another user")
	}
	// The built binary's directory is root's own (0700): copy it where nobody can run it.
	dir, err := os.MkdirTemp("", "aster-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "aster")
	for from, to := range map[string]string{asterBin: bin, sandboxtest.InitBinary(t): filepath.Join(dir, "aster-init")} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	// A Docker socket only root may use, whatever the host's socket allows.
	sock := filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"exec", "--docker-host", "unix://" + sock, "--", "true"}, []string{"permission denied", "docker group", "usermod -aG docker"}},
		{[]string{"exec", "--runtime", "oci", "--", "true"}, []string{"the oci runtime needs root", "--runtime docker"}},
		{[]string{"exec", "--runtime", "gvisor", "--", "true"}, []string{"the gvisor runtime needs root", "--runtime docker"}},
	} {
		cmd := exec.CommandContext(t.Context(), bin, c.args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		code, _, stderr := testkit.Run(t, cmd)
		if code == 0 {
			t.Errorf("%v: exit 0 as uid 65534", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: exit %d, stderr has no %q: %s", c.args, code, w, stderr)
			}
		}
	}
}
