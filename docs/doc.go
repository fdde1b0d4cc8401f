// Package docs holds Aster's documentation pages (Markdown, one page per
// concern) and the test that keeps their links alive: every relative link and
// #anchor in README.md, CONTRIBUTING.md, SECURITY.md and docs/*.md must name a
// file that exists and a heading that is there. It has no Go API.
package docs
