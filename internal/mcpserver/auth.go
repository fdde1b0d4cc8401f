package mcpserver

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// MinTokenLength is the shortest bearer token a token file may hold: shorter
// ones are guessable.
const MinTokenLength = 16

// LoadTokens reads a token file: one token per line; blank lines and lines
// starting with # are ignored. A file with no token is an error, so a typo
// cannot silently open the server.
func LoadTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	toks, err := ParseTokens(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return toks, nil
}

// ParseTokens reads tokens, one a line, as LoadTokens does.
func ParseTokens(r io.Reader) ([]string, error) {
	var toks []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			return nil, fmt.Errorf("line %d: a token has no spaces", n)
		}
		if len(line) < MinTokenLength {
			return nil, fmt.Errorf("line %d: token is shorter than %d characters", n, MinTokenLength)
		}
		toks = append(toks, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, errors.New("no tokens in the file")
	}
	return toks, nil
}

// tokenSet checks bearer tokens in constant time: every candidate is compared
// (as a SHA-256, so lengths do not leak either) and none ends the loop early.
type tokenSet struct{ sums [][sha256.Size]byte }

func newTokenSet(tokens []string) tokenSet {
	ts := tokenSet{sums: make([][sha256.Size]byte, len(tokens))}
	for i, t := range tokens {
		ts.sums[i] = sha256.Sum256([]byte(t))
	}
	return ts
}

// verify is an auth.TokenVerifier. The token's index is its user id, which
// the SDK binds to the session so one token cannot drive another's session.
func (ts tokenSet) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	got := sha256.Sum256([]byte(token))
	match := -1
	for i := range ts.sums {
		if subtle.ConstantTimeCompare(got[:], ts.sums[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: fmt.Sprintf("token-%d", match)}, nil
}
