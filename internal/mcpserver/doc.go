// Package mcpserver is `aster mcp`: Aster's sandbox as Model Context Protocol
// tools, on the official MCP Go SDK. It offers three tools, each call one fresh
// sandbox destroyed afterwards: execute (a command over the files sent with the
// call), run_tests (the two-phase test runner of testphase) and validate (the
// gate's analyzers). The tools run through an Executor, an in-process
// *sandbox.Manager or a remote `aster sandbox serve` (remote.Sandbox), with the
// limits a call asks for resolved against the server's defaults and ceilings.
//
// It serves stdio (ServeStdio) or streamable HTTP (ServeHTTP: bearer tokens,
// refused on a non-loopback address without them, capped sessions per token,
// resumable streams with a bounded event store). A call with a progress token
// is told when it is queued, when it starts and, at an interval, its output so
// far; Close cancels every call and waits until its sandbox is destroyed.
package mcpserver
