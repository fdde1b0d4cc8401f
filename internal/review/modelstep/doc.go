// Package modelstep is the review's model step: ModelReviewer implements
// review.Reviewer over an llm.Client. It builds the prompt from the change as
// untrusted data (prompt.go), fits the diff into the token budget in at most
// MaxChunks calls and names what it left out (budget.go), validates and repairs
// the model's JSON answer (model_output.go), anchors every comment to a line
// inside the diff's hunks or drops it (anchor.go), and, when an Agent is set,
// runs the model's tool calls in sandboxes (agentic.go). Package review calls
// it only through the Reviewer interface.
package modelstep
