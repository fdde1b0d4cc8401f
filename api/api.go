// Package api holds the wire types of Aster's sandbox API (`aster sandbox
// serve`): the requests and responses of /v1/execute and /v1/test, the error
// body and its codes, and the NDJSON events of a streamed run. It imports
// only the standard library, so any module can use it; package client is the
// Go client built on it.
package api

// Routes of the API.
const (
	RouteExecute  = "/v1/execute"
	RouteTest     = "/v1/test"
	RouteValidate = "/v1/validate"
	// RouteExecuteStream and RouteTestStream take the same requests as
	// RouteExecute and RouteTest and answer with the NDJSON event stream.
	// (Accept: application/x-ndjson on the plain routes does the same; the
	// description lists the stream apart so that generated clients type
	// the plain routes' answers as the one JSON result.)
	RouteExecuteStream = "/v1/execute/stream"
	RouteTestStream    = "/v1/test/stream"
	RouteHealth        = "/healthz"
	RouteReady         = "/readyz"
	RouteMetrics       = "/metrics"
	// RouteOpenAPI serves the API's OpenAPI description (package api/openapi).
	RouteOpenAPI = "/openapi.json"
	// RouteRuns takes an asynchronous run (POST: the body of RouteExecute
	// or RouteTest, ?kind=execute|test) and lists the caller's runs (GET).
	RouteRuns = "/v1/runs"
	// RouteRun is one run's state and, once it ended, its result:
	// RouteRunPrefix followed by the run's id.
	RouteRun       = "/v1/runs/{id}"
	RouteRunPrefix = "/v1/runs/"
	// RouteImages lists the images a request may name, with the versions
	// of their toolchains.
	RouteImages = "/v1/images"
)

// Media types and headers of the API.
const (
	ContentTypeJSON   = "application/json"
	ContentTypeNDJSON = "application/x-ndjson"
	ContentTypeTar    = "application/x-tar"
	// HeaderSpec carries the JSON spec of an application/x-tar request.
	HeaderSpec = "X-Aster-Spec"
	// HeaderRunID names the run in every response that started one.
	HeaderRunID = "X-Aster-Run-Id"
	// PartSpec and PartWorkspace are the multipart field names of the JSON
	// spec and the tar snapshot.
	PartSpec      = "spec"
	PartWorkspace = "workspace"
	// HeaderSignature carries the HMAC-SHA256 of a run's callback body:
	// "sha256=" and the hex digest, keyed by the operator's callback secret.
	HeaderSignature = "X-Aster-Signature"
)

// Ready is the body of a successful GET /readyz.
type Ready struct {
	Status        string `json:"status"`
	Runtime       string `json:"runtime"`
	Image         string `json:"image"`
	ImageDigest   string `json:"image_digest"`
	Running       int    `json:"running"`
	Queued        int    `json:"queued"`
	MaxConcurrent int    `json:"max_concurrent"`
	QueueSize     int    `json:"queue_size"`
}
