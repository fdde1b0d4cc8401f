package gitea

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/github"
)

// Headers Gitea sends with every delivery; Forgejo sends its own names besides (and, like
// Gitea, the X-Gitea-* ones). Only the signature headers are covered by the secret.
const (
	SignatureHeader        = "X-Gitea-Signature"
	ForgejoSignatureHeader = "X-Forgejo-Signature"
	EventHeader            = "X-Gitea-Event"
	ForgejoEventHeader     = "X-Forgejo-Event"
	DeliveryHeader         = "X-Gitea-Delivery"
	ForgejoDeliveryHeader  = "X-Forgejo-Delivery"
)

// WebhookProtocol is how Gitea and Forgejo sign and label deliveries: the bare hex
// HMAC-SHA256 of the raw body under the webhook's secret, verified before anything is
// parsed (github.WebhookHandler does both).
func WebhookProtocol() github.Protocol {
	return github.Protocol{
		SignatureHeaders: []string{SignatureHeader, ForgejoSignatureHeader},
		EventHeaders:     []string{EventHeader, ForgejoEventHeader},
		DeliveryHeaders:  []string{DeliveryHeader, ForgejoDeliveryHeader},
		Parse:            ParseEvent,
	}
}

// Sign returns the X-Gitea-Signature value of body under secret (bare hex), as Gitea
// computes it.
func Sign(secret, body []byte) string {
	return strings.TrimPrefix(github.Sign(secret, body), "sha256=")
}

// reviewActions are the pull_request actions that start a review, and the name the App
// knows each by (Gitea says "synchronized" where GitHub says "synchronize").
var reviewActions = map[string]string{"opened": "opened", "reopened": "reopened", "synchronized": "synchronize"}

type wireHookPull struct {
	Number int        `json:"number"`
	Title  string     `json:"title"`
	Draft  bool       `json:"draft"`
	Head   wireBranch `json:"head"`
	Base   wireBranch `json:"base"`
}

type wirePullPayload struct {
	Action      string        `json:"action"`
	Number      int           `json:"number"`
	Before      string        `json:"before"`
	PullRequest *wireHookPull `json:"pull_request"`
	Repository  *wireRepo     `json:"repository"`
	Sender      wireUser      `json:"sender"`
}

type wireCommentPayload struct {
	Action string `json:"action"`
	Issue  *struct {
		Number      int             `json:"number"`
		PullRequest json.RawMessage `json:"pull_request"`
	} `json:"issue"`
	Comment *struct {
		ID        int64    `json:"id"`
		Body      string   `json:"body"`
		User      wireUser `json:"user"`
		CreatedAt string   `json:"created_at"`
		UpdatedAt string   `json:"updated_at"`
	} `json:"comment"`
	Repository *wireRepo `json:"repository"`
	Sender     wireUser  `json:"sender"`
	IsPull     bool      `json:"is_pull"`
}

// ParseEvent turns a verified Gitea delivery into one of the App's events: a
// *github.PullRequestEvent (opened, reopened, synchronized), a *github.ReviewCommandEvent
// (an issue_comment created or edited on a pull request whose first line is an /aster
// command: review, resolve, pause, resume, help), a *github.ThreadCommandEvent (the same
// with /aster ignore or unignore: Gitea sends a reply in a conversation this way too), or a
// *github.Ignored. Gitea has no installations: InstallationID is 0. A body that is not the
// JSON Gitea sends wraps github.ErrMalformedPayload.
func ParseEvent(event, deliveryID string, body []byte) (github.Event, error) {
	ignored := func(action, reason string) (github.Event, error) {
		return &github.Ignored{DeliveryID: deliveryID, Event: event, Action: action, Reason: reason}, nil
	}
	switch event {
	case "pull_request", "issue_comment":
	case "":
		return nil, fmt.Errorf("%w: missing %s", github.ErrMalformedPayload, EventHeader)
	default:
		return ignored("", "event not handled")
	}
	if !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) {
		return nil, fmt.Errorf("%w: %s body is not a JSON object", github.ErrMalformedPayload, event)
	}
	if event == "pull_request" {
		var w wirePullPayload
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, malformed(event, err)
		}
		action, ok := reviewActions[w.Action]
		if !ok {
			return ignored(w.Action, "action not handled")
		}
		return parsePull(deliveryID, action, &w)
	}
	var w wireCommentPayload
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, malformed(event, err)
	}
	if w.Action != "created" && w.Action != "edited" {
		return ignored(w.Action, "action not handled")
	}
	if w.Issue == nil || w.Comment == nil {
		return nil, fmt.Errorf("%w: issue_comment without issue or comment", github.ErrMalformedPayload)
	}
	if !w.IsPull && (len(w.Issue.PullRequest) == 0 || string(w.Issue.PullRequest) == "null") {
		return ignored(w.Action, "comment on an issue, not a pull request")
	}
	// Gitea sends a reply in a conversation as the pull request's issue_comment: a thread
	// command is read as one, never as the conversation's.
	_, _, threadCommand := github.ThreadCommandOf(w.Comment.Body)
	command := github.CommandOf(w.Comment.Body)
	if command == "" && !threadCommand {
		return ignored(w.Action, "comment is not an /aster command")
	}
	repo, err := parseRepo(w.Repository)
	if err != nil {
		return nil, err
	}
	if w.Issue.Number <= 0 || w.Comment.ID <= 0 {
		return nil, fmt.Errorf("%w: issue number %d, comment id %d", github.ErrMalformedPayload, w.Issue.Number, w.Comment.ID)
	}
	if !validName(w.Sender.Login) {
		return nil, fmt.Errorf("%w: sender is not a Gitea login", github.ErrMalformedPayload)
	}
	stamp := w.Comment.UpdatedAt
	if stamp == "" {
		stamp = w.Comment.CreatedAt
	}
	updated, err := time.Parse(time.RFC3339, stamp)
	if err != nil {
		return nil, fmt.Errorf("%w: comment updated_at %q is not a time", github.ErrMalformedPayload, stamp)
	}
	if threadCommand {
		// A reply in a conversation (Gitea sends it as a pull request's issue_comment): the
		// job reads the conversations through the API, where the command's thread and
		// author are checked.
		return &github.ThreadCommandEvent{DeliveryID: deliveryID, Event: event, Repo: repo, Number: w.Issue.Number,
			Action: w.Action, CommentID: w.Comment.ID, Sender: w.Sender.Login}, nil
	}
	return &github.ReviewCommandEvent{DeliveryID: deliveryID, Repo: repo, Number: w.Issue.Number, Command: command, CommentID: w.Comment.ID,
		UpdatedAt: updated.UTC(), Edited: w.Action == "edited", Sender: w.Sender.Login}, nil
}

func parsePull(deliveryID, action string, w *wirePullPayload) (github.Event, error) {
	pr := w.PullRequest
	if pr == nil {
		return nil, fmt.Errorf("%w: pull_request event without pull_request", github.ErrMalformedPayload)
	}
	repo, err := parseRepo(w.Repository)
	if err != nil {
		return nil, err
	}
	var headRepo *github.Repo
	if pr.Head.Repo != nil {
		head, err := parseRepo(pr.Head.Repo)
		if err != nil {
			return nil, err
		}
		headRepo = &head
	}
	ev, err := github.PullRequestFields{
		DeliveryID: deliveryID, Action: action, Repo: repo, Number: w.Number, PullNumber: pr.Number,
		Title: pr.Title, Draft: pr.Draft, HeadSHA: pr.Head.SHA, HeadRef: pr.Head.Ref, HeadRepo: headRepo,
		BaseSHA: pr.Base.SHA, BaseRef: pr.Base.Ref, Sender: w.Sender.Login, Before: w.Before,
	}.Event()
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return ev, nil
}

func parseRepo(w *wireRepo) (github.Repo, error) {
	if w == nil {
		return github.Repo{}, fmt.Errorf("%w: missing repository", github.ErrMalformedPayload)
	}
	owner, name := w.Owner.Login, w.Name
	if owner == "" || name == "" {
		owner, name, _ = strings.Cut(w.FullName, "/")
	}
	if !validName(owner) || !validName(name) {
		return github.Repo{}, fmt.Errorf("%w: repository name %q is not a Gitea name", github.ErrMalformedPayload, w.FullName)
	}
	return github.Repo{ID: w.ID, Owner: owner, Name: name, CloneURL: w.CloneURL, Private: w.Private}, nil
}

func malformed(event string, err error) error {
	return fmt.Errorf("%w: %s: %v", github.ErrMalformedPayload, event, err)
}
