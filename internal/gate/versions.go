package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// VersionsFile is where images built by images/sandbox/build.sh list the
// version of every analyzer they carry, as each tool printed it at build
// time: {"bandit": "1.7.10", "gosec": "2.30.0", ...}, keyed by analyzer name.
// The runner reads it once per image of a run, in a sandbox of its own, so
// the report can say which version found what. An image without it (one an
// operator built) leaves the versions empty.
const VersionsFile = "/etc/aster/analyzers.json"

// Caps on the versions file: it comes from the image, which an operator may
// have built, so it is read as untrusted input.
const (
	maxVersionsBytes = 16 << 10
	maxVersions      = 64
	maxVersionBytes  = 64
	versionsTimeout  = 30 * time.Second
)

var versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+~_-]{0,63}$`)

// ErrInvalidVersions marks a versions file that cannot be read.
var ErrInvalidVersions = errors.New("invalid analyzer versions file")

// ParseVersions reads a versions file: one JSON object whose keys are
// analyzer names and whose values are version strings. Entries whose key or
// value does not look like a name or a version are left out rather than
// failing the whole file.
func ParseVersions(r io.Reader) (map[string]string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxVersionsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read versions: %w", err)
	}
	if len(b) > maxVersionsBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrInvalidVersions, maxVersionsBytes)
	}
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrInvalidVersions)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrInvalidVersions)
	}
	// Keys in sorted order, so that past maxVersions the same entries are
	// kept on every read of the same file.
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		s, ok := v.(string)
		if !ok || !nameRE.MatchString(k) || len(s) > maxVersionBytes || !versionRE.MatchString(s) {
			continue
		}
		if len(out) == maxVersions {
			break
		}
		out[k] = s
	}
	return out, nil
}

// readVersions reads VersionsFile of image in a sandbox; nil when the image
// has none or the run fails (the report then shows no version).
func (r *Runner) readVersions(ctx context.Context, image string) map[string]string {
	limits := r.opts.Limits
	limits.TimeoutMS = versionsTimeout.Milliseconds()
	limits.OutputBytes = maxVersionsBytes + 1
	limits.OutputCeilingBytes = maxVersionsBytes + 1
	res, err := r.sb.Run(ctx, sandbox.Spec{Image: image, Argv: []string{"cat", VersionsFile}, Env: map[string]string{"HOME": "/tmp"}, Limits: limits})
	if err != nil || res.Status != sandbox.StatusOK || res.Stdout.Truncated {
		r.log.Debug("no analyzer versions", "image", image, "status", res.Status, "err", err)
		return nil
	}
	v, err := ParseVersions(bytes.NewReader(res.Stdout.Data))
	if err != nil {
		r.log.Debug("no analyzer versions", "image", image, "err", err)
		return nil
	}
	return v
}
