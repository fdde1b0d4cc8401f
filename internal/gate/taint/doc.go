// Package taint holds Aster's own taint engines and what the gate needs to
// run them: the engine sources (engine/python: Python 3 on the standard
// library's ast module, which also reads Jinja2 and Django templates;
// engine/js: Node), embedded, and the tar that carries one of them into an
// analyzer's sandbox on stdin, with the list of files to analyse. The
// sandbox unpacks it under Dir, outside the snapshot at /work, so changing
// an engine never needs a new image and nothing of the repository is run.
//
// An engine reads the snapshot, follows data from sources (request
// objects, the command line, the environment) through assignments, string
// building, containers, attributes and function calls to sinks per CWE, and
// writes SARIF 2.1.0 with each finding's path from source to sink as a code
// flow (finding.Finding.Flow). The rule ids are "aster.taint.<category>"
// (Categories).
package taint
