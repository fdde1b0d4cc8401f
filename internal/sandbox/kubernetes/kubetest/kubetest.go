// Package kubetest connects tests to a real Kubernetes cluster, by default the
// single-node one scripts/k8s/up.sh starts on this machine: it loads the
// kubeconfig, makes a namespace per test, puts the aster-init image of the
// code under test into the cluster, and decides whether a missing cluster
// skips a test (a developer's machine) or fails it (CI with
// ASTER_REQUIRE_K8S=1: a suite that silently skips proves nothing).
package kubetest

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/asterhq/aster/internal/sandbox/kubernetes"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// Required reports whether a missing cluster must fail tests rather than skip.
func Required() bool { return os.Getenv("ASTER_REQUIRE_K8S") == "1" }

// KubeconfigPath is the test cluster's kubeconfig (ASTER_K8S_KUBECONFIG
// overrides the one scripts/k8s/up.sh writes).
func KubeconfigPath() string {
	return cmp.Or(os.Getenv("ASTER_K8S_KUBECONFIG"), "/var/lib/aster-k8s/kubeconfig")
}

// ContainerdSocket is the test cluster's containerd, where the init image of
// the code under test is imported (ASTER_K8S_CONTAINERD_SOCK overrides).
func ContainerdSocket() string {
	return cmp.Or(os.Getenv("ASTER_K8S_CONTAINERD_SOCK"), "/run/aster-k8s/containerd/containerd.sock")
}

// Skip skips the test, or fails it when Required.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("ASTER_REQUIRE_K8S=1: "+format, args...)
	}
	t.Skipf(format+" (start the test cluster with `make k8s-up`; ASTER_REQUIRE_K8S=1 fails instead)", args...)
}

// Config returns the client configuration of a cluster that answers /readyz,
// or skips.
func Config(t testing.TB) *rest.Config {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a Kubernetes cluster (-short)")
	}
	path := KubeconfigPath()
	if _, err := os.Stat(path); err != nil {
		Skip(t, "no test cluster: %v", err)
	}
	cfg, err := kubernetes.RESTConfig(path)
	if err != nil {
		Skip(t, "test cluster: %v", err)
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := core.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		Skip(t, "test cluster not ready: %v", err)
	}
	return cfg
}

// Core returns a client for the core API group.
func Core(t testing.TB, cfg *rest.Config) corev1client.CoreV1Interface {
	t.Helper()
	c, err := corev1client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Namespace creates a namespace for the test (restricted Pod Security) and
// deletes it afterwards.
func Namespace(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "aster-test-" + hex.EncodeToString(b[:])
	core := Core(t, cfg)
	// Pod Security Admission enforces the restricted profile, as in
	// deploy/kubernetes: a sandbox Pod that falls short of it is refused.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"aster.test": "true", "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if _, err := core.Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	// The controller-manager creates the "default" service account a moment later (and a
	// minimal cluster has none); the ServiceAccount admission plugin refuses Pods until then.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}, AutomountServiceAccountToken: ptrTo(false)}
	if _, err := core.ServiceAccounts(name).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create service account: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = core.Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// InitImage returns the aster-init image of the code under test, imported into
// the test cluster's containerd once (named by its content, so a changed
// aster-init is a new image). ASTER_K8S_INIT_IMAGE names an image to use
// instead (a cluster this machine cannot import into).
func InitImage(t testing.TB) string {
	t.Helper()
	if v := os.Getenv("ASTER_K8S_INIT_IMAGE"); v != "" {
		return v
	}
	sandboxtest.InitBinary(t) // a build failure fails; a cluster that cannot take the image skips
	ref, err := initImage()
	if err != nil {
		Skip(t, "cannot put the aster-init image into the test cluster: %v", err)
	}
	return ref
}

// initImage imports the aster-init image once per test process.
var initImage = sync.OnceValues(func() (string, error) {
	bin, err := sandboxtest.InitBinaryPath()
	if err != nil {
		return "", err
	}
	return importInitImage(bin, ContainerdSocket())
})

func importInitImage(bin, sock string) (string, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	ref := "aster-init:test-" + hex.EncodeToString(sum[:6])
	if _, err := os.Stat(sock); err != nil {
		return "", fmt.Errorf("containerd socket: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctr := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...)
	}
	out, err := ctr("images", "ls", "-q").Output()
	if err != nil {
		return "", fmt.Errorf("ctr images ls: %w", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l == "docker.io/library/"+ref {
			return ref, nil
		}
	}
	archive, err := ImageArchive(ref, data)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "aster-init-image-*.tar")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(archive); err != nil {
		f.Close()
		return "", err
	}
	f.Close()
	if out, err := ctr("images", "import", f.Name()).CombinedOutput(); err != nil {
		return "", fmt.Errorf("ctr images import: %v: %s", err, out)
	}
	return ref, nil
}

// ImageArchive packs the aster-init binary as a one-layer image in the
// docker-archive format (`docker load`, `ctr images import`): the binary at
// /aster-init, its entrypoint, user 1000.
func ImageArchive(ref string, binary []byte) ([]byte, error) {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(kubernetes.InitImageBinary, "/"), Mode: 0o755, Size: int64(len(binary)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerSum := sha256.Sum256(layer.Bytes())
	layerHex := hex.EncodeToString(layerSum[:])
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{kubernetes.InitImageBinary}, "User": "1000:1000"},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerHex}},
	})
	if err != nil {
		return nil, err
	}
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": []string{layerHex + "/layer.tar"}}})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	aw := tar.NewWriter(&out)
	for _, e := range []struct {
		name string
		data []byte
	}{{"manifest.json", manifest}, {cfgName, cfg}, {filepath.Join(layerHex, "layer.tar"), layer.Bytes()}} {
		if err := aw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := aw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Options returns runtime options for a test: the test cluster, a fresh
// namespace, the init image of the code under test, images never pulled (the
// test cluster has no registry), Pods labelled with the test's name.
func Options(t testing.TB) kubernetes.Options {
	t.Helper()
	cfg := Config(t)
	return kubernetes.Options{
		Config:              cfg,
		Namespace:           Namespace(t, cfg),
		InitImage:           InitImage(t),
		InitImagePullPolicy: corev1.PullNever,
		ImagePullPolicy:     corev1.PullNever,
		// Two CPUs, runs of one CPU each: a Pod may wait its turn a while.
		ScheduleTimeout: 10 * time.Minute,
		StartTimeout:    15 * time.Minute,
		Labels:          map[string]string{"aster.test": labelOf(t.Name())},
	}
}

// New returns a runtime with opts, closed when the test ends.
func New(t testing.TB, opts kubernetes.Options) *kubernetes.Runtime {
	t.Helper()
	rt, err := kubernetes.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Check(ctx); err != nil {
		Skip(t, "kubernetes runtime: %v", err)
	}
	return rt
}

// Runtime is New with Options.
func Runtime(t testing.TB) *kubernetes.Runtime {
	t.Helper()
	return New(t, Options(t))
}

func labelOf(name string) string {
	name = filepath.Base(name)
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), "-._")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-._")
	}
	return s
}

func ptrTo[T any](v T) *T { return &v }
