package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// ImageSource is where the runtime gets images from: their digest, and their
// root filesystem as one flattened tar stream. The runtime exports each digest
// once into its cache and mounts that copy read-only into every sandbox.
type ImageSource interface {
	// Resolve returns the digest of an image; sandbox.ErrUnknownImage when the
	// source does not have it, sandbox.ErrUnavailable when it cannot be asked.
	Resolve(ctx context.Context, image string) (string, error)
	// Export writes the image's flattened root filesystem as a tar stream.
	Export(ctx context.Context, image string, w io.Writer) error
}

// dockerAPI is the part of the Docker API the image source uses.
type dockerAPI interface {
	ImageInspect(ctx context.Context, imageID string, inspectOpts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerExport(ctx context.Context, containerID string, options client.ContainerExportOptions) (client.ContainerExportResult, error)
	ContainerRemove(ctx context.Context, containerID string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
}

var _ dockerAPI = (*client.Client)(nil)

// DockerSource reads images from a Docker-compatible engine. The engine is only
// needed to resolve and export an image; sandboxes run without it.
type DockerSource struct {
	api    dockerAPI
	closer func() error
}

// NewDockerSource connects to the engine at host (DOCKER_HOST or the default
// socket when empty). It does not contact it yet.
func NewDockerSource(host string) (*DockerSource, error) {
	var copts []client.Opt
	switch {
	case host != "":
		copts = append(copts, client.WithHost(host))
	case os.Getenv("DOCKER_HOST") != "":
		copts = append(copts, client.WithHostFromEnv())
	}
	c, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return &DockerSource{api: c, closer: c.Close}, nil
}

// Close releases the client.
func (d *DockerSource) Close() error {
	if d.closer != nil {
		return d.closer()
	}
	return nil
}

// Resolve implements ImageSource.
func (d *DockerSource) Resolve(ctx context.Context, image string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := d.api.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return res.ID, nil
	case cerrdefs.IsNotFound(err):
		return "", fmt.Errorf("%w: %s is not present on the engine; pull or build it there first (`make image` builds only the default %s)", sandbox.ErrUnknownImage, image, "aster-sandbox:latest")
	case client.IsErrConnectionFailed(err), errors.Is(err, context.DeadlineExceeded):
		return "", fmt.Errorf("%w: docker engine: %v", sandbox.ErrUnavailable, err)
	}
	return "", fmt.Errorf("inspect image: %w", err)
}

// exportDeadline bounds how long the throwaway container of an export may live
// before the label reaper removes it.
const exportDeadline = 30 * time.Minute

// Export implements ImageSource: it creates (never starts) a container of the
// image, streams its filesystem and removes it.
func (d *DockerSource) Export(ctx context.Context, image string, w io.Writer) error {
	created, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image:      image,
			Entrypoint: []string{"/nonexistent"},
			Labels: map[string]string{
				"aster.managed":  "true",
				"aster.run":      "export",
				"aster.deadline": strconv.FormatInt(time.Now().Add(exportDeadline).Unix(), 10),
			},
			NetworkDisabled: true,
		},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return fmt.Errorf("create export container: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = d.api.ContainerRemove(rctx, created.ID, client.ContainerRemoveOptions{Force: true})
	}()
	rc, err := d.api.ContainerExport(ctx, created.ID, client.ContainerExportOptions{})
	if err != nil {
		return fmt.Errorf("export container: %w", err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("export container: %w", err)
	}
	return nil
}

// imageCache keeps exported root filesystems, one directory per digest, and an
// index from image name to digest so that sandboxes start without asking the
// source once an image is exported.
type imageCache struct {
	dir string
	src ImageSource
	// log says when an export starts, how it goes and when it ends: the first
	// run of an image waits for it (about a minute for the default image).
	log *slog.Logger

	mu         sync.Mutex
	byName     map[string]cachedImage
	export     map[string]*sync.Mutex // per digest: one export at a time
	refreshing map[string]bool        // names being re-resolved in the background
}

type cachedImage struct {
	digest string
	rootfs string
	at     time.Time
}

// indexFile maps image names to digests.
const indexFile = "images.json"

// resolveTTL is how long a name→digest answer is trusted before the source is
// asked again (a re-tagged image is picked up after at most this long).
const resolveTTL = 30 * time.Second

func newImageCache(dir string, src ImageSource) *imageCache {
	return &imageCache{dir: dir, src: src, byName: map[string]cachedImage{}, export: map[string]*sync.Mutex{}, refreshing: map[string]bool{}}
}

func digestDir(digest string) string {
	return strings.NewReplacer(":", "-", "/", "-").Replace(digest)
}

// info resolves an image, falling back to the index when the source is
// unreachable and the image was exported before. A known image is answered
// from memory at once; past resolveTTL it is re-resolved in the background,
// so a slow or restarting engine never holds up a sandbox start.
func (c *imageCache) info(ctx context.Context, image string) (sandbox.ImageInfo, error) {
	c.mu.Lock()
	e, ok := c.byName[image]
	if ok && time.Since(e.at) >= resolveTTL && !c.refreshing[image] && c.src != nil {
		c.refreshing[image] = true
		go c.refresh(image)
	}
	c.mu.Unlock()
	if ok {
		return sandbox.ImageInfo{Name: image, Digest: e.digest}, nil
	}
	return c.resolve(ctx, image)
}

// refresh re-resolves a known image. An image the source no longer has is
// forgotten, so the next run asks again and is refused; an unreachable
// source leaves the known digest in place.
func (c *imageCache) refresh(image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	digest, err := c.src.Resolve(ctx, image)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.refreshing, image)
	switch {
	case err == nil:
		c.rememberLocked(image, digest)
	case errors.Is(err, sandbox.ErrUnknownImage):
		delete(c.byName, image)
	}
}

// resolve asks the source, or the index of exported images when the source
// cannot be asked.
func (c *imageCache) resolve(ctx context.Context, image string) (sandbox.ImageInfo, error) {
	var digest string
	var err error
	if c.src != nil {
		digest, err = c.src.Resolve(ctx, image)
	} else {
		err = fmt.Errorf("%w: no image source configured", sandbox.ErrUnavailable)
	}
	if err != nil {
		if errors.Is(err, sandbox.ErrUnknownImage) {
			return sandbox.ImageInfo{}, err
		}
		// Daemonless: an image exported before still runs.
		if d, ok := c.readIndex()[image]; ok && c.present(d) {
			c.remember(image, d)
			return sandbox.ImageInfo{Name: image, Digest: d}, nil
		}
		return sandbox.ImageInfo{}, err
	}
	c.remember(image, digest)
	return sandbox.ImageInfo{Name: image, Digest: digest}, nil
}

// remember keeps image's digest in memory and marks its tree used (see
// prune): a tree in use is marked at least once per resolveTTL.
func (c *imageCache) remember(image, digest string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rememberLocked(image, digest)
}

// rememberLocked is remember with c.mu held.
func (c *imageCache) rememberLocked(image, digest string) {
	c.byName[image] = cachedImage{digest: digest, rootfs: c.rootfsPath(digest), at: time.Now()}
	runtimekit.MarkUsed(c.rootfsPath(digest))
}

func (c *imageCache) rootfsPath(digest string) string {
	return filepath.Join(c.dir, rootfsDir, digestDir(digest))
}

func (c *imageCache) present(digest string) bool {
	fi, err := os.Stat(filepath.Join(c.rootfsPath(digest), InitMountPath))
	return err == nil && fi.Mode().IsRegular()
}

// rootfs returns the read-only root filesystem of image, exporting it first
// when this digest was never exported.
func (c *imageCache) rootfs(ctx context.Context, image string) (string, error) {
	c.mu.Lock()
	e, ok := c.byName[image]
	c.mu.Unlock()
	if !ok {
		info, err := c.info(ctx, image)
		if err != nil {
			return "", err
		}
		e = cachedImage{digest: info.Digest, rootfs: c.rootfsPath(info.Digest)}
	}
	if c.present(e.digest) {
		return e.rootfs, nil
	}
	return e.rootfs, c.exportOnce(ctx, image, e.digest)
}

func (c *imageCache) exportOnce(ctx context.Context, image, digest string) error {
	c.mu.Lock()
	mu, ok := c.export[digest]
	if !ok {
		mu = &sync.Mutex{}
		c.export[digest] = mu
	}
	c.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if c.present(digest) {
		return nil
	}
	if c.src == nil {
		return fmt.Errorf("%w: image %s is not exported and there is no image source", sandbox.ErrUnavailable, image)
	}
	if err := os.MkdirAll(filepath.Join(c.dir, rootfsDir), 0o700); err != nil {
		return fmt.Errorf("image cache: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Join(c.dir, rootfsDir), ".export-")
	if err != nil {
		return fmt.Errorf("image cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The tree's root is the sandbox's "/", which every process in it must be
	// able to traverse; its 0700 parents keep host users out.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("image cache: %w", err)
	}
	pr, pw := io.Pipe()
	exportErr := make(chan error, 1)
	go func() {
		err := c.src.Export(ctx, image, pw)
		pw.CloseWithError(err)
		exportErr <- err
	}()
	read := &countingReader{r: pr}
	stop := c.progress(image, digest, read)
	_, err = extractRootfs(read, tmp)
	stop(err)
	pr.CloseWithError(errors.New("extraction ended"))
	if xerr := <-exportErr; xerr != nil && err == nil {
		err = xerr
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", image, err)
	}
	if err := addMountpoints(tmp); err != nil {
		return fmt.Errorf("export %s: %w", image, err)
	}
	if err := os.Rename(tmp, c.rootfsPath(digest)); err != nil {
		if !c.present(digest) {
			return fmt.Errorf("image cache: %w", err)
		}
	}
	if err := c.writeIndex(image, digest); err != nil {
		return err
	}
	c.prune()
	return nil
}

// prune removes the trees of digests no image name in the index points to
// and that no run has used for runtimekit.CacheUnusedFor: every rebuild of an
// image would otherwise leave its old tree (about a gigabyte for the default
// image) behind for good.
func (c *imageCache) prune() {
	current := map[string]bool{}
	for _, d := range c.readIndex() {
		current[digestDir(d)] = true
	}
	runtimekit.PruneUnused(filepath.Join(c.dir, rootfsDir), runtimekit.CacheUnusedFor, func(name string) bool { return current[name] })
}

// addMountpoints creates what the sandbox mounts over, so that the runtime
// never has to write into the shared, read-only tree.
func addMountpoints(root string) error {
	for _, d := range []string{"proc", "sys", "dev", "work", "tmp", filepath.Dir(strings.TrimPrefix(InitMountPath, "/"))} {
		p := filepath.Join(root, d)
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			continue
		}
		_ = os.Remove(p)
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(root, strings.TrimPrefix(InitMountPath, "/")), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	return f.Close()
}

func (c *imageCache) readIndex() map[string]string {
	idx := map[string]string{}
	b, err := os.ReadFile(filepath.Join(c.dir, indexFile))
	if err == nil {
		_ = json.Unmarshal(b, &idx)
	}
	return idx
}

func (c *imageCache) writeIndex(image, digest string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	idx := c.readIndex()
	idx[image] = digest
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.dir, ".images-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(c.dir, indexFile))
}

// exportProgressEvery is how often a running export says how far it got.
var exportProgressEvery = 10 * time.Second

// progress logs that an export of image starts, then every exportProgressEvery the bytes
// read so far; the function it returns logs the end (or nothing more on failure, which
// the caller reports) and stops the ticker.
func (c *imageCache) progress(image, digest string, read *countingReader) func(error) {
	log := c.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	short := strings.TrimPrefix(digest, "sha256:")
	short = short[:min(12, len(short))]
	log.Info("exporting the image for this runtime: the first run of this image version waits for it, later runs reuse it",
		"image", image, "digest", short)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(exportProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				log.Info("exporting the image", "image", image, "mb_so_far", read.n.Load()>>20, "elapsed", time.Since(start).Round(time.Second))
			}
		}
	}()
	return func(err error) {
		close(done)
		<-ended
		if err == nil {
			log.Info("image exported", "image", image, "mb", read.n.Load()>>20, "took", time.Since(start).Round(100*time.Millisecond))
		}
	}
}

// countingReader counts the bytes read through it (read from another goroutine).
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
