// Package openapi holds the OpenAPI 3.1 description of Aster's sandbox API
// (`aster sandbox serve`: /v1/execute, /v1/test, /v1/validate and the
// service routes). The server serves it at GET /openapi.json; generate a
// client from openapi.json beside this file.
package openapi

import _ "embed"

//go:embed openapi.json
var document string

// JSON returns the description, byte for byte the file openapi.json.
func JSON() []byte { return []byte(document) }
