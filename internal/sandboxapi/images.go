package sandboxapi

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/textclip"
)

// toolchainProbe prints "name version-line" for each language tool the image
// has. It runs in a sandbox like any job (no network, default limits): what
// an image prints is read as untrusted text, capped and cut to a version.
const toolchainProbe = `for t in "python python3 --version" "pip python3 -m pip --version" "node node --version" "npm npm --version" "go go env GOVERSION" "java java -version" "ruby ruby --version" "php php --version" "gcc gcc --version" "rustc rustc --version" "dotnet dotnet --version"; do
  set -- $t; n=$1; shift
  command -v "$1" >/dev/null 2>&1 || continue
  printf '%s %s\n' "$n" "$("$@" 2>&1 | head -n 1)"
done`

// maxProbeOutput bounds what the probe may print.
const maxProbeOutput = 16 << 10

// versionRE is the first version number in a tool's line ("Python 3.13.5",
// "v24.1.0", "go1.26.1", "openjdk version \"21.0.8\"").
var versionRE = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)+(?:[-+][0-9A-Za-z.]+)?`)

// imageCache keeps each image's toolchains by digest, so an image is probed
// once per content.
type imageCache struct {
	mu   sync.Mutex
	seen map[string]map[string]string // name@digest → toolchains
}

// images serves GET /v1/images: the allow list, default first, each image's
// digest and its toolchains' versions.
func (s *Server) images(w http.ResponseWriter, r *http.Request) {
	out := api.ImageList{Images: []api.Image{}}
	def := s.mgr.DefaultImage()
	for _, name := range s.mgr.Images() {
		img := api.Image{Name: name, Default: name == def, Toolchains: map[string]string{}}
		info, err := s.mgr.Runtime().ImageInfo(r.Context(), name)
		if err != nil {
			img.Error = textclip.OneLine(err.Error(), 300)
			out.Images = append(out.Images, img)
			continue
		}
		img.Digest = info.Digest
		tc, err := s.toolchains(r.Context(), name, info.Digest)
		if err != nil {
			img.Error = "toolchains not read: " + textclip.OneLine(err.Error(), 300)
		}
		if tc != nil {
			img.Toolchains = tc
		}
		out.Images = append(out.Images, img)
	}
	s.writeJSON(w, http.StatusOK, out)
}

// toolchains runs the probe in image once per digest.
func (s *Server) toolchains(ctx context.Context, image, digest string) (map[string]string, error) {
	key := image + "@" + digest
	s.imageInfo.mu.Lock()
	if tc, ok := s.imageInfo.seen[key]; ok {
		s.imageInfo.mu.Unlock()
		return tc, nil
	}
	s.imageInfo.mu.Unlock()
	timeout := s.opts.ImageProbeTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	limits := s.mgr.Limits()
	limits.TimeoutMS = timeout.Milliseconds()
	limits.OutputBytes = maxProbeOutput
	limits.OutputCeilingBytes = maxProbeOutput
	res, err := s.mgr.Run(ctx, sandbox.Spec{Image: image, Argv: []string{"sh", "-c", toolchainProbe}, Limits: limits})
	if err != nil {
		return nil, err
	}
	tc := parseToolchains(res.Stdout.Data)
	if res.Status == sandbox.StatusOK {
		s.imageInfo.mu.Lock()
		if s.imageInfo.seen == nil {
			s.imageInfo.seen = map[string]map[string]string{}
		}
		s.imageInfo.seen[key] = tc
		s.imageInfo.mu.Unlock()
	}
	return tc, nil
}

// parseToolchains reads the probe's "name line" pairs: names it asked for,
// each with the first version number on its line.
func parseToolchains(out []byte) map[string]string {
	known := map[string]bool{"python": true, "pip": true, "node": true, "npm": true, "go": true, "java": true, "ruby": true, "php": true, "gcc": true, "rustc": true, "dotnet": true}
	tc := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), maxProbeOutput)
	for sc.Scan() {
		name, line, ok := strings.Cut(sc.Text(), " ")
		if !ok || !known[name] || tc[name] != "" {
			continue
		}
		if v := versionRE.FindString(line); v != "" {
			tc[name] = textclip.Head(v, 64, "")
		}
	}
	return tc
}
