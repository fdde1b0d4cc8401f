// Package publish is the one home of what a review shows on a pull request, whatever the
// forge: the inline comments and their hidden markers (one identity per finding across
// pushes: FindingIDs, CommentID), which of them go inline, are folded into the review body
// or were said before (PlanReview), the summary comment, the check's output and
// annotations. A forge adapter (internal/github for GitHub) only reads the pull request's
// state and translates a Publication into its API calls; nothing here knows a forge's API.
package publish
