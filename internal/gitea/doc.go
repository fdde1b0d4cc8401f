// Package gitea is Aster's adapter for Gitea (and the API-compatible Forgejo): a bot
// account's REST client scoped to one repository, implementing the same operations the
// GitHub adapter offers the App (the pull request, its diffs, the head archive, reviews,
// the summary comment, threads, a commit status in place of a check run), and the reading
// of Gitea's webhook deliveries into the App's events. It speaks the forge-neutral types of
// internal/github and internal/publish, so the App's queue, worker and posting logic run
// unchanged on either forge. The bot token only ever goes into the Authorization header of
// requests to the configured Gitea: never into a URL, a log line or an error.
package gitea
