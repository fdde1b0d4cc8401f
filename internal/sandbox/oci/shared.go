package oci

import (
	"context"

	"github.com/asterhq/aster/internal/sandbox"
)

// RootfsCache is this runtime's cache of exported image trees (one per
// digest, setuid and setgid bits stripped, mount points added, SECURITY.md
// M3), for another runtime that builds on the same trees: the microvm
// runtime turns each into a read-only disk image.
type RootfsCache struct{ c *imageCache }

// NewRootfsCache opens (and secures) the cache at dir, exporting from src.
func NewRootfsCache(dir string, src ImageSource) (*RootfsCache, error) {
	if _, err := secureCache(dir); err != nil {
		return nil, err
	}
	return &RootfsCache{c: newImageCache(dir, src)}, nil
}

// Info resolves an image to its digest (see Runtime.ImageInfo).
func (r *RootfsCache) Info(ctx context.Context, image string) (sandbox.ImageInfo, error) {
	return r.c.info(ctx, image)
}

// Rootfs returns the exported tree of image, exporting it first if needed.
func (r *RootfsCache) Rootfs(ctx context.Context, image string) (string, error) {
	return r.c.rootfs(ctx, image)
}
