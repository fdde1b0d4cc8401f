package github

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/publish"
)

// Event is one parsed webhook delivery: *PullRequestEvent, *ReviewCommandEvent,
// *ThreadResolvedEvent, *ThreadCommandEvent, *InstallationEvent, or *Ignored for everything
// Aster does not act on.
type Event interface {
	// Delivery is the X-GitHub-Delivery id the event came with.
	Delivery() string
	isEvent()
}

// Repo names a repository. Owner and Name are validated to be safe in an API path.
type Repo struct {
	ID       int64
	Owner    string
	Name     string
	CloneURL string
	Private  bool
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Branch is one side of a pull request.
type Branch struct {
	SHA  string
	Ref  string
	Repo Repo // for the head of a fork PR, the fork; zero when the fork was deleted
}

// PullRequestEvent is a pull_request delivery with an action Aster reviews on.
type PullRequestEvent struct {
	DeliveryID     string
	Action         string // opened, reopened, synchronize, ready_for_review
	InstallationID int64
	Repo           Repo // the base repository: where the review is posted
	Number         int
	Title          string
	Draft          bool
	Fork           bool // head lives in another repository (or in a deleted fork)
	Head           Branch
	Base           Branch
	Sender         string
	// Before is the previous head SHA on synchronize ("" otherwise): the start of an
	// incremental review.
	Before string
}

// ReviewCommandEvent is an issue_comment "created" or "edited" on a pull request whose (new)
// body is an Aster command (/aster review, resolve, pause, resume, help). The sender's write
// permission is NOT checked here: it needs the API. CommentID and UpdatedAt identify the
// command: a body replayed under another delivery id carries the same pair, a genuine edit
// a later UpdatedAt.
type ReviewCommandEvent struct {
	DeliveryID     string
	InstallationID int64
	Repo           Repo
	Number         int
	// Command is the command's word: CmdReview (for /aster resolve too), CmdPause,
	// CmdResume or CmdHelp; "" is taken as CmdReview.
	Command   string
	CommentID int64
	// UpdatedAt is the comment's updated_at (its created_at when GitHub sends none).
	UpdatedAt time.Time
	Edited    bool
	Sender    string
}

// ThreadResolvedEvent is a pull_request_review_thread "resolved" by a person, on a thread a
// bot opened with one of Aster's markers: the job reads the pull request's threads through
// the API (who resolved it, with what access, whether the thread is really Aster's) before
// it records anything. The payload is only the reason to look.
type ThreadResolvedEvent struct {
	DeliveryID     string
	InstallationID int64
	Repo           Repo
	Number         int
	ThreadID       string // the thread's node id, for the record
	Sender         string
}

// ThreadCommandEvent is a pull_request_review_comment created or edited by a person, in reply
// to another review comment, whose first line is a thread command ("/aster ignore [reason]" or
// "/aster unignore"): the job reads the pull request's threads through the API (whether the
// thread is Aster's, who wrote the command, with what access) before it records or answers
// anything. The payload is only the reason to look.
type ThreadCommandEvent struct {
	DeliveryID     string
	Event          string // the delivery's event: pull_request_review_comment (Gitea: issue_comment)
	InstallationID int64
	Repo           Repo
	Number         int
	Action         string // created or edited
	CommentID      int64  // the command comment, for the log
	Sender         string
}

// InstallationEvent is an installation delivery (created, deleted, suspend, unsuspend,
// new_permissions_accepted), recorded so operators can see who installed the App where.
type InstallationEvent struct {
	DeliveryID     string
	Action         string
	InstallationID int64
	Account        string
	Repositories   []string // full names, when GitHub lists them
	Sender         string
}

// Ignored is the outcome for a verified delivery Aster does not act on: another event, another
// action, a comment that is not a command, a bot sender, a delivery without an installation.
type Ignored struct {
	DeliveryID string
	Event      string
	Action     string
	Reason     string
}

func (e *PullRequestEvent) Delivery() string    { return e.DeliveryID }
func (e *ReviewCommandEvent) Delivery() string  { return e.DeliveryID }
func (e *ThreadResolvedEvent) Delivery() string { return e.DeliveryID }
func (e *ThreadCommandEvent) Delivery() string  { return e.DeliveryID }
func (e *InstallationEvent) Delivery() string   { return e.DeliveryID }
func (e *Ignored) Delivery() string             { return e.DeliveryID }
func (*PullRequestEvent) isEvent()              {}
func (*ReviewCommandEvent) isEvent()            {}
func (*ThreadResolvedEvent) isEvent()           {}
func (*ThreadCommandEvent) isEvent()            {}
func (*InstallationEvent) isEvent()             {}
func (*Ignored) isEvent()                       {}

// ReviewCommand is the comment that asks Aster for a (re-)review. It must be the whole first
// line of the comment, so a quote or a sentence that mentions it does not trigger.
const ReviewCommand = "/aster review"

// ResolveCommand asks Aster to re-check its open findings now: a new review of the head,
// which re-checks what the review it replaces left open (the same run as ReviewCommand).
const ResolveCommand = "/aster resolve"

// The words of the commands a pull request's conversation takes (ReviewCommandEvent.Command).
const (
	CmdReview = "review" // /aster review and /aster resolve: a new review of the head
	CmdPause  = "pause"  // no automatic reviews of this pull request until /aster resume
	CmdResume = "resume" // automatic reviews again (and a review of a head not reviewed yet)
	CmdHelp   = "help"   // the commands, answered in place
	// CmdInThread is a thread command (/aster ignore, unignore) given in the conversation,
	// where it has no finding to act on: answered in place with where it works.
	CmdInThread = "in-thread"
)

// commandWords maps the word after "/aster " to the command it is.
var commandWords = map[string]string{
	"review": CmdReview, "resolve": CmdReview, "pause": CmdPause, "resume": CmdResume, "help": CmdHelp,
	"ignore": CmdInThread, "unignore": CmdInThread,
}

// reviewActions are the pull_request actions that start a review.
var reviewActions = map[string]bool{
	"opened": true, "reopened": true, "synchronize": true, "ready_for_review": true,
}

var (
	namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	shaPattern  = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)
)

// The wire shapes: only the fields Aster reads.
type wireAccount struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

type wireRepo struct {
	ID       int64       `json:"id"`
	Name     string      `json:"name"`
	FullName string      `json:"full_name"`
	Owner    wireAccount `json:"owner"`
	Private  bool        `json:"private"`
	CloneURL string      `json:"clone_url"`
}

type wireBranch struct {
	SHA  string    `json:"sha"`
	Ref  string    `json:"ref"`
	Repo *wireRepo `json:"repo"`
}

type wireCommon struct {
	Action       string    `json:"action"`
	Repository   *wireRepo `json:"repository"`
	Installation *struct {
		ID      int64       `json:"id"`
		Account wireAccount `json:"account"`
	} `json:"installation"`
	Sender wireAccount `json:"sender"`
}

type wirePullRequest struct {
	wireCommon
	Number      int    `json:"number"`
	Before      string `json:"before"`
	PullRequest *struct {
		Number int        `json:"number"`
		Title  string     `json:"title"`
		Draft  bool       `json:"draft"`
		Head   wireBranch `json:"head"`
		Base   wireBranch `json:"base"`
	} `json:"pull_request"`
}

type wireIssueComment struct {
	wireCommon
	Issue *struct {
		Number      int             `json:"number"`
		PullRequest json.RawMessage `json:"pull_request"`
	} `json:"issue"`
	Comment *struct {
		ID        int64       `json:"id"`
		Body      string      `json:"body"`
		User      wireAccount `json:"user"`
		CreatedAt string      `json:"created_at"`
		UpdatedAt string      `json:"updated_at"`
	} `json:"comment"`
}

type wireReviewThread struct {
	wireCommon
	PullRequest *struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	Thread *struct {
		NodeID   string `json:"node_id"`
		Comments []struct {
			ID   int64       `json:"id"`
			Body string      `json:"body"`
			User wireAccount `json:"user"`
		} `json:"comments"`
	} `json:"thread"`
}

type wireReviewComment struct {
	wireCommon
	PullRequest *struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	Comment *struct {
		ID        int64       `json:"id"`
		InReplyTo int64       `json:"in_reply_to_id"`
		Body      string      `json:"body"`
		User      wireAccount `json:"user"`
	} `json:"comment"`
}

type wireInstallation struct {
	wireCommon
	Repositories []struct {
		FullName string `json:"full_name"`
	} `json:"repositories"`
}

// ParseEvent turns a verified delivery into an Event. Call it only after VerifySignature: it
// trusts nothing but the shape. A body that is not the JSON GitHub sends for the event wraps
// ErrMalformedPayload; an event or action Aster does not handle is an *Ignored, not an error.
func ParseEvent(event, deliveryID string, body []byte) (Event, error) {
	ignored := func(action, reason string) (Event, error) {
		return &Ignored{DeliveryID: deliveryID, Event: event, Action: action, Reason: reason}, nil
	}
	switch event {
	case "pull_request", "issue_comment", "installation", "pull_request_review_thread", "pull_request_review_comment":
	case "":
		return nil, fmt.Errorf("%w: missing X-GitHub-Event", ErrMalformedPayload)
	default:
		return ignored("", "event not handled")
	}
	// Unmarshal below checks the syntax; this rules out null, arrays and scalars up front.
	if !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) {
		return nil, fmt.Errorf("%w: %s body is not a JSON object", ErrMalformedPayload, event)
	}

	switch event {
	case "pull_request":
		var w wirePullRequest
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, malformed(event, err)
		}
		if !reviewActions[w.Action] {
			return ignored(w.Action, "action not handled")
		}
		if w.Installation == nil || w.Installation.ID <= 0 {
			return ignored(w.Action, "no installation: not a GitHub App delivery")
		}
		return parsePullRequest(deliveryID, &w)
	case "issue_comment":
		var w wireIssueComment
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, malformed(event, err)
		}
		if w.Action != "created" && w.Action != "edited" {
			return ignored(w.Action, "action not handled")
		}
		if w.Installation == nil || w.Installation.ID <= 0 {
			return ignored(w.Action, "no installation: not a GitHub App delivery")
		}
		if w.Issue == nil || w.Comment == nil {
			return nil, fmt.Errorf("%w: issue_comment without issue or comment", ErrMalformedPayload)
		}
		if len(w.Issue.PullRequest) == 0 || string(w.Issue.PullRequest) == "null" {
			return ignored(w.Action, "comment on an issue, not a pull request")
		}
		if strings.EqualFold(w.Sender.Type, "Bot") {
			return ignored(w.Action, "comment by a bot")
		}
		command := CommandOf(w.Comment.Body)
		if command == "" {
			return ignored(w.Action, "comment is not an /aster command")
		}
		repo, err := parseRepo(w.Repository)
		if err != nil {
			return nil, err
		}
		if w.Issue.Number <= 0 {
			return nil, fmt.Errorf("%w: issue number %d", ErrMalformedPayload, w.Issue.Number)
		}
		if w.Comment.ID <= 0 {
			return nil, fmt.Errorf("%w: comment id %d", ErrMalformedPayload, w.Comment.ID)
		}
		stamp := w.Comment.UpdatedAt
		if stamp == "" {
			stamp = w.Comment.CreatedAt
		}
		updated, err := time.Parse(time.RFC3339, stamp)
		if err != nil {
			return nil, fmt.Errorf("%w: comment updated_at %q is not a time", ErrMalformedPayload, stamp)
		}
		return &ReviewCommandEvent{
			DeliveryID:     deliveryID,
			InstallationID: w.Installation.ID,
			Repo:           repo,
			Number:         w.Issue.Number,
			Command:        command,
			CommentID:      w.Comment.ID,
			UpdatedAt:      updated.UTC(),
			Edited:         w.Action == "edited",
			Sender:         w.Sender.Login,
		}, nil
	case "pull_request_review_thread":
		var w wireReviewThread
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, malformed(event, err)
		}
		return parseThreadResolved(deliveryID, &w, ignored)
	case "pull_request_review_comment":
		var w wireReviewComment
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, malformed(event, err)
		}
		return parseThreadCommand(deliveryID, &w, ignored)
	default: // installation
		var w wireInstallation
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, malformed(event, err)
		}
		if w.Installation == nil || w.Installation.ID <= 0 {
			return nil, fmt.Errorf("%w: installation event without installation id", ErrMalformedPayload)
		}
		ev := &InstallationEvent{
			DeliveryID:     deliveryID,
			Action:         w.Action,
			InstallationID: w.Installation.ID,
			Account:        w.Installation.Account.Login,
			Sender:         w.Sender.Login,
		}
		for _, r := range w.Repositories {
			ev.Repositories = append(ev.Repositories, r.FullName)
		}
		return ev, nil
	}
}

func parsePullRequest(deliveryID string, w *wirePullRequest) (Event, error) {
	pr := w.PullRequest
	if pr == nil {
		return nil, fmt.Errorf("%w: pull_request event without pull_request", ErrMalformedPayload)
	}
	repo, err := parseRepo(w.Repository)
	if err != nil {
		return nil, err
	}
	var headRepo *Repo
	if pr.Head.Repo != nil {
		head, err := parseRepo(pr.Head.Repo)
		if err != nil {
			return nil, err
		}
		headRepo = &head
	}
	ev, err := PullRequestFields{
		DeliveryID: deliveryID, Action: w.Action, Repo: repo, Number: w.Number, PullNumber: pr.Number,
		Title: pr.Title, Draft: pr.Draft, HeadSHA: pr.Head.SHA, HeadRef: pr.Head.Ref, HeadRepo: headRepo,
		BaseSHA: pr.Base.SHA, BaseRef: pr.Base.Ref, Sender: w.Sender.Login, Before: w.Before,
	}.Event()
	if err != nil {
		return nil, err
	}
	ev.InstallationID = w.Installation.ID
	return ev, nil
}

// PullRequestFields are the parts of a pull_request delivery that every forge
// sends, its repositories already parsed by the forge's own rules. Event checks
// what does not depend on the forge, so that GitHub and Gitea deliveries are
// held to the same rules.
type PullRequestFields struct {
	DeliveryID, Action string
	Repo               Repo // the base repository
	// Number is the delivery's own pull request number, PullNumber the pull
	// request object's: the first that is set is used.
	Number, PullNumber int
	Title              string
	Draft              bool
	HeadSHA, HeadRef   string
	HeadRepo           *Repo // nil when the head repository was deleted
	BaseSHA, BaseRef   string
	Sender             string
	Before             string // the previous head on synchronize
}

// Event validates the fields (a positive number, commit ids for head and base)
// and builds the event; a head in another repository, or in a deleted one, is a
// fork.
func (f PullRequestFields) Event() (*PullRequestEvent, error) {
	number := f.Number
	if number == 0 {
		number = f.PullNumber
	}
	if number <= 0 {
		return nil, fmt.Errorf("%w: pull request number %d", ErrMalformedPayload, number)
	}
	if !shaPattern.MatchString(f.HeadSHA) || !shaPattern.MatchString(f.BaseSHA) {
		return nil, fmt.Errorf("%w: head or base sha is not a commit id", ErrMalformedPayload)
	}
	ev := &PullRequestEvent{
		DeliveryID: f.DeliveryID,
		Action:     f.Action,
		Repo:       f.Repo,
		Number:     number,
		Title:      f.Title,
		Draft:      f.Draft,
		Head:       Branch{SHA: f.HeadSHA, Ref: f.HeadRef},
		Base:       Branch{SHA: f.BaseSHA, Ref: f.BaseRef, Repo: f.Repo},
		Sender:     f.Sender,
	}
	if f.Action == "synchronize" && shaPattern.MatchString(f.Before) {
		ev.Before = f.Before
	}
	if f.HeadRepo == nil {
		ev.Fork = true // the fork was deleted; the commits are still in the base repository
	} else {
		ev.Head.Repo = *f.HeadRepo
		ev.Fork = f.HeadRepo.ID != f.Repo.ID || !strings.EqualFold(f.HeadRepo.FullName(), f.Repo.FullName())
	}
	return ev, nil
}

// parseThreadResolved reads a pull_request_review_thread delivery: only "resolved", by a
// person, of a thread whose first comment a bot wrote with an Aster marker in it, is acted on
// (Aster's own resolutions come back as this event too, sent by the App).
func parseThreadResolved(deliveryID string, w *wireReviewThread, ignored func(action, reason string) (Event, error)) (Event, error) {
	if w.Action != "resolved" {
		return ignored(w.Action, "action not handled")
	}
	if w.Installation == nil || w.Installation.ID <= 0 {
		return ignored(w.Action, "no installation: not a GitHub App delivery")
	}
	if w.Thread == nil || w.PullRequest == nil {
		return nil, fmt.Errorf("%w: pull_request_review_thread without thread or pull_request", ErrMalformedPayload)
	}
	if strings.EqualFold(w.Sender.Type, "Bot") {
		return ignored(w.Action, "resolved by a bot")
	}
	if len(w.Thread.Comments) == 0 || !strings.EqualFold(w.Thread.Comments[0].User.Type, "Bot") ||
		len(publish.Markers(w.Thread.Comments[0].Body)) == 0 {
		return ignored(w.Action, "not a thread Aster opened")
	}
	repo, err := parseRepo(w.Repository)
	if err != nil {
		return nil, err
	}
	if w.PullRequest.Number <= 0 {
		return nil, fmt.Errorf("%w: pull request number %d", ErrMalformedPayload, w.PullRequest.Number)
	}
	return &ThreadResolvedEvent{DeliveryID: deliveryID, InstallationID: w.Installation.ID, Repo: repo,
		Number: w.PullRequest.Number, ThreadID: nodeIDOrEmpty(w.Thread.NodeID), Sender: w.Sender.Login}, nil
}

// parseThreadCommand reads a pull_request_review_comment delivery: only a reply, created or
// edited by a person, whose first line is a thread command is acted on. Whether the thread is
// one Aster opened is for the job to read through the API: the payload does not say.
func parseThreadCommand(deliveryID string, w *wireReviewComment, ignored func(action, reason string) (Event, error)) (Event, error) {
	if w.Action != "created" && w.Action != "edited" {
		return ignored(w.Action, "action not handled")
	}
	if w.Installation == nil || w.Installation.ID <= 0 {
		return ignored(w.Action, "no installation: not a GitHub App delivery")
	}
	if w.Comment == nil || w.PullRequest == nil {
		return nil, fmt.Errorf("%w: pull_request_review_comment without comment or pull_request", ErrMalformedPayload)
	}
	if strings.EqualFold(w.Sender.Type, "Bot") || strings.EqualFold(w.Comment.User.Type, "Bot") {
		return ignored(w.Action, "comment by a bot")
	}
	if _, _, ok := ThreadCommandOf(w.Comment.Body); !ok {
		return ignored(w.Action, "comment is not an /aster thread command")
	}
	if w.Comment.InReplyTo <= 0 {
		return ignored(w.Action, "not a reply in a thread")
	}
	repo, err := parseRepo(w.Repository)
	if err != nil {
		return nil, err
	}
	if w.PullRequest.Number <= 0 {
		return nil, fmt.Errorf("%w: pull request number %d", ErrMalformedPayload, w.PullRequest.Number)
	}
	if w.Comment.ID <= 0 {
		return nil, fmt.Errorf("%w: comment id %d", ErrMalformedPayload, w.Comment.ID)
	}
	return &ThreadCommandEvent{DeliveryID: deliveryID, Event: "pull_request_review_comment", InstallationID: w.Installation.ID, Repo: repo,
		Number: w.PullRequest.Number, Action: w.Action, CommentID: w.Comment.ID, Sender: w.Sender.Login}, nil
}

// nodeIDOrEmpty keeps a node id only when it looks like one (it is logged).
func nodeIDOrEmpty(s string) string {
	if len(s) > 100 || !nodeIDPattern.MatchString(s) {
		return ""
	}
	return s
}

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9_=-]{1,100}$`)

func parseRepo(w *wireRepo) (Repo, error) {
	if w == nil {
		return Repo{}, fmt.Errorf("%w: missing repository", ErrMalformedPayload)
	}
	owner, name := w.Owner.Login, w.Name
	if owner == "" || name == "" {
		owner, name, _ = strings.Cut(w.FullName, "/")
	}
	if !validName(owner) || !validName(name) {
		return Repo{}, fmt.Errorf("%w: repository name %q is not a GitHub name", ErrMalformedPayload, w.FullName)
	}
	return Repo{ID: w.ID, Owner: owner, Name: name, CloneURL: w.CloneURL, Private: w.Private}, nil
}

func validName(s string) bool {
	return namePattern.MatchString(s) && s != "." && s != ".."
}

func malformed(event string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrMalformedPayload, event, err)
}

// IsReviewCommand reports whether a comment body asks for a review: its first non-blank line,
// trimmed, is ReviewCommand or ResolveCommand, optionally followed by whitespace and more
// words.
func IsReviewCommand(body string) bool { return CommandOf(body) == CmdReview }

// threadCommandPattern is a thread command: "/aster ignore [reason]" or "/aster unignore" on
// the comment's first line, nothing before it.
var threadCommandPattern = regexp.MustCompile(`^\s*/aster\s+(ignore|unignore)\b[ \t]*([^\r\n]*)`)

// ThreadCommandOf returns the thread command a reply in a review thread gives: word is
// "ignore" (dismiss the thread's finding, for reason) or "unignore"; ok is false for any
// other comment.
func ThreadCommandOf(body string) (word, reason string, ok bool) {
	m := threadCommandPattern.FindStringSubmatch(body)
	if m == nil {
		return "", "", false
	}
	return m[1], strings.TrimSpace(m[2]), true
}

// CommandOf returns the command a pull request comment gives (CmdReview, CmdPause,
// CmdResume, CmdHelp, or CmdInThread for a thread command), or "" when it gives none: its first non-blank line, trimmed, must be
// "/aster WORD", optionally followed by whitespace and more words.
func CommandOf(body string) string {
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, "/aster ")
		if !ok {
			return ""
		}
		word, _, _ := strings.Cut(strings.ReplaceAll(rest, "\t", " "), " ")
		return commandWords[word]
	}
	return ""
}
