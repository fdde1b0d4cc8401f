package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/asterhq/aster/internal/sandboxapi"
)

// verifier is an auth.TokenVerifier over the orchestrator's token set (the
// same file format and constant-time check as `aster sandbox serve`). The
// user id is a digest prefix of the token, which the SDK binds to the session
// so that one token cannot drive a session opened with another.
func verifier(tokens *sandboxapi.Tokens) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if !tokens.Valid(token) {
			return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
		}
		sum := sha256.Sum256([]byte(token))
		return &auth.TokenInfo{UserID: "token-" + hex.EncodeToString(sum[:8])}, nil
	}
}
