package sandboxapi

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/asterhq/aster/api"
)

// MinTokenBytes is the shortest bearer token a token file may hold.
const MinTokenBytes = 16

// Tokens are the bearer tokens the API accepts. Only their SHA-256 digests
// are kept; a presented token is compared with every one in constant time.
type Tokens struct {
	digests [][sha256.Size]byte
	// profiles are the egress profiles each token may give its sessions
	// (`egress=NAME[,NAME]` after it on its line); none without.
	profiles map[[sha256.Size]byte][]string
}

// MaxProfileName bounds an egress profile's name.
const MaxProfileName = 64

// ValidProfileName says name can name an egress profile: letters, digits,
// '-', '_' and '.', at most MaxProfileName bytes.
func ValidProfileName(name string) bool {
	if name == "" || len(name) > MaxProfileName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Profiles are the egress profiles the presented token may use.
func (t *Tokens) Profiles(presented string) []string {
	sum := sha256.Sum256([]byte(presented))
	return t.profiles[sum]
}

// LoadTokens reads a token file: one token a line, optionally followed by
// egress=PROFILE[,PROFILE] (the egress profiles its sessions may use);
// blank lines and lines starting with # are ignored. A file without tokens, or with one shorter
// than MinTokenBytes, is an error.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return t, nil
}

// ParseTokens reads tokens in the token-file format from r.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		tok := fields[0]
		if len(tok) < MinTokenBytes {
			return nil, fmt.Errorf("line %d: token shorter than %d bytes", line, MinTokenBytes)
		}
		sum := sha256.Sum256([]byte(tok))
		t.digests = append(t.digests, sum)
		for _, opt := range fields[1:] {
			names, ok := strings.CutPrefix(opt, "egress=")
			if !ok {
				return nil, fmt.Errorf("line %d: after the token only egress=PROFILE[,PROFILE] may follow (the egress profiles its sessions may use)", line)
			}
			for _, n := range strings.Split(names, ",") {
				if !ValidProfileName(n) {
					return nil, fmt.Errorf("line %d: egress profile name %q: letters, digits, '-', '_', '.', at most %d bytes", line, n, MaxProfileName)
				}
				if t.profiles == nil {
					t.profiles = map[[sha256.Size]byte][]string{}
				}
				t.profiles[sum] = append(t.profiles[sum], n)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.digests) == 0 {
		return nil, errors.New("no tokens")
	}
	return t, nil
}

// Valid reports whether presented is one of the tokens. Digests make the
// comparison independent of the token's length, and every token is compared
// so the time does not say which one matched.
func (t *Tokens) Valid(presented string) bool {
	d := sha256.Sum256([]byte(presented))
	match := 0
	for i := range t.digests {
		match |= subtle.ConstantTimeCompare(d[:], t.digests[i][:])
	}
	return match == 1
}

// Len returns the number of tokens.
func (t *Tokens) Len() int { return len(t.digests) }

// authorize checks the Authorization header against t. Without tokens (a
// loopback-only server) it refuses what a web browser could send on behalf
// of a hostile page instead: any request with an Origin header (cross-site
// form posts and fetches) and any Host that is not a loopback name (DNS
// rebinding).
func (t *Tokens) authorize(r *http.Request) error {
	if t == nil {
		if r.Header.Get("Origin") != "" {
			return fmt.Errorf("%w: requests from web pages (with an Origin header) are refused; use a token file to serve browsers' backends", api.ErrForbidden)
		}
		if !loopbackHost(r.Host) {
			return fmt.Errorf("%w: Host %q is not a loopback address; without a token file only loopback names are served", api.ErrForbidden, r.Host)
		}
		return nil
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || !t.Valid(strings.TrimSpace(tok)) {
		return fmt.Errorf("%w: send Authorization: Bearer <token> with a token from the server's token file", api.ErrUnauthorized)
	}
	return nil
}

// CheckExposure refuses to serve without tokens on anything but a loopback
// address: an unauthenticated code-execution API must not be reachable from
// other machines by accident.
func CheckExposure(addr net.Addr, haveTokens bool) error {
	if haveTokens {
		return nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	if _, ok := addr.(*net.UnixAddr); ok {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without authentication: give --token-file (one bearer token a line), or listen on a loopback address such as 127.0.0.1:8080", addr)
}

// CheckListenAddr is CheckExposure for an address not yet bound: "host:port",
// where the host must be a loopback IP or "localhost" when there are no tokens.
func CheckListenAddr(addr string, haveTokens bool) error {
	if haveTokens {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q without authentication: give --token-file (one bearer token a line), or listen on a loopback address such as 127.0.0.1:8080", addr)
}

// loopbackHost reports whether a Host header names this machine's loopback
// interface: localhost, 127.0.0.0/8 or ::1, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
