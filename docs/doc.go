// Package docs holds Aster's documentation pages (Markdown, one page per
// concern) and the tests that keep them true: every relative link and #anchor
// in README.md, CONTRIBUTING.md, SECURITY.md and docs/*.md must name a file
// that exists and a heading that is there, and every aster command line in
// their shell blocks must parse against the real command tree. It has no Go
// API.
package docs
