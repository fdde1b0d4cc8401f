package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxWebhookBodyBytes is GitHub's own cap on a webhook payload (25 MB); larger bodies get 413.
const MaxWebhookBodyBytes int64 = 25 << 20

// Headers GitHub sends with every delivery. They are not covered by the signature.
const (
	EventHeader    = "X-GitHub-Event"
	DeliveryHeader = "X-GitHub-Delivery"
)

var deliveryPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// Sink stores an accepted event durably (a job, an installation record). It is declared here,
// by its consumer, and implemented by the queue. Return ErrDuplicateDelivery for a delivery id
// already stored (ids are compared case-insensitively) and ErrDuplicateCommand for a review
// command already stored under another id; any other error makes the handler answer 503.
type Sink interface {
	Accept(ctx context.Context, ev Event) error
}

// Outcome is what happened to one delivery, for metrics and logs.
type Outcome struct {
	Delivery string
	Event    string
	Action   string
	Result   string // accepted, ignored, duplicate, busy, rejected, failed
	Reason   string
	Status   int
}

// WebhookOptions configures NewWebhookHandler.
type WebhookOptions struct {
	Secret       []byte // the App's webhook secret; required
	Sink         Sink   // required
	MaxBodyBytes int64  // 0 means MaxWebhookBodyBytes
	// Budget bounds the body bytes of all requests in flight; nil makes one of
	// DefaultWebhookInflightBytes. Share one per server.
	Budget *BodyBudget
	// BodyTimeout is how long the body may take to arrive once the headers are in (0:
	// DefaultWebhookBodyTimeout): a held-open body loses its reservation by then.
	BodyTimeout  time.Duration
	ReviewDrafts bool // act on draft pull requests too (default: ignore them)
	// Protocol is the forge's way of signing and labelling deliveries (zero: GitHub's).
	Protocol  Protocol
	Logger    *slog.Logger
	OnOutcome func(Outcome) // optional, called once per request, concurrently
}

// WebhookHandler receives GitHub App deliveries: check the signature header's form, reserve
// the body in the budget, read it under a deadline while computing its HMAC, verify, parse,
// hand actionable events to the Sink, answer 202 (accepted), 200 (ignored or duplicate),
// 401, 400, 408, 413, 429 (with Retry-After) or 503.
type WebhookHandler struct {
	opts WebhookOptions
	log  *slog.Logger
}

var _ http.Handler = (*WebhookHandler)(nil)

// NewWebhookHandler checks opts and returns the handler.
func NewWebhookHandler(opts WebhookOptions) (*WebhookHandler, error) {
	if len(opts.Secret) == 0 {
		return nil, errors.New("webhook handler: empty secret")
	}
	if opts.Sink == nil {
		return nil, errors.New("webhook handler: nil sink")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = MaxWebhookBodyBytes
	}
	if opts.Budget == nil {
		opts.Budget = NewBodyBudget(DefaultWebhookInflightBytes)
	}
	if opts.Budget.Max() < opts.MaxBodyBytes {
		return nil, fmt.Errorf("webhook handler: a budget of %d bytes in flight cannot hold one body of %d", opts.Budget.Max(), opts.MaxBodyBytes)
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultWebhookBodyTimeout
	}
	opts.Protocol = opts.Protocol.orGitHub()
	if opts.Protocol.Parse == nil || len(opts.Protocol.SignatureHeaders) == 0 {
		return nil, errors.New("webhook handler: a protocol needs a signature header and a parser")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &WebhookHandler{opts: opts, log: log}, nil
}

// ServeHTTP implements http.Handler.
func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeWebhookReply(w, http.StatusMethodNotAllowed, "rejected", "method not allowed")
		return
	}
	// The deadline covers the whole body from here: a client that holds its body open is cut
	// off and its reservation given back. (A ResponseRecorder cannot set one; tests that
	// need it use a real server.)
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.opts.BodyTimeout))
	out := h.handle(r)
	if out.Status == http.StatusTooManyRequests {
		// Reservations are given back within the body timeout at the latest.
		w.Header().Set("Retry-After", strconv.Itoa(int(max(time.Second, h.opts.BodyTimeout).Round(time.Second)/time.Second)))
	}
	if h.opts.OnOutcome != nil {
		h.opts.OnOutcome(out)
	}
	log := h.log.With("delivery", out.Delivery, "event", out.Event, "action", out.Action,
		"result", out.Result, "status", out.Status)
	if out.Status >= 400 {
		log.Warn("webhook", "reason", out.Reason)
	} else {
		log.Info("webhook", "reason", out.Reason)
	}
	writeWebhookReply(w, out.Status, out.Result, out.Reason)
}

func (h *WebhookHandler) handle(r *http.Request) Outcome {
	// GitHub sends lower-case GUIDs; the id is compared case-insensitively so a re-cased
	// replay is the same delivery.
	p := h.opts.Protocol
	_, delivery := first(r.Header, p.DeliveryHeaders)
	_, event := first(r.Header, p.EventHeaders)
	out := Outcome{Delivery: strings.ToLower(delivery), Event: event}
	if !deliveryPattern.MatchString(out.Delivery) {
		out.Delivery = "" // unsigned and unvalidated: never echo it into logs
	}
	fail := func(err error) Outcome {
		out.Status = WebhookStatus(err)
		out.Result = "rejected"
		switch {
		case out.Status == http.StatusTooManyRequests:
			out.Result = "busy"
		case out.Status >= 500:
			out.Result = "failed"
		}
		out.Reason = err.Error()
		return out
	}

	sigName, sig := first(r.Header, p.SignatureHeaders)
	body, err := readSigned(r, h.opts.Secret, signature{name: sigName, value: sig, prefix: p.SignaturePrefix}, h.opts.MaxBodyBytes, h.opts.Budget)
	if err != nil {
		return fail(err)
	}
	ev, err := h.parse(r, out, body.data)
	body.Release() // the parsed event holds copies of the few fields it needs
	if err != nil {
		return fail(err)
	}
	if ig, ok := ev.(*Ignored); ok {
		out.Action, out.Result, out.Reason, out.Status = ig.Action, "ignored", ig.Reason, http.StatusOK
		return out
	}
	out.Action = actionOf(ev)
	if err := h.opts.Sink.Accept(r.Context(), ev); err != nil {
		switch {
		case errors.Is(err, ErrDuplicateCommand):
			out.Result, out.Reason, out.Status = "duplicate", "review command already handled", WebhookStatus(err)
			return out
		case errors.Is(err, ErrDuplicateDelivery):
			out.Result, out.Reason, out.Status = "duplicate", "delivery already stored", WebhookStatus(err)
			return out
		}
		o := fail(err)
		o.Reason = "could not store the event"
		h.log.Error("webhook sink", "delivery", out.Delivery, "err", err)
		return o
	}
	out.Result, out.Status = "accepted", WebhookStatus(nil)
	return out
}

// parse turns a verified body into an Event.
func (h *WebhookHandler) parse(r *http.Request, out Outcome, body []byte) (Event, error) {
	if out.Delivery == "" {
		return nil, fmt.Errorf("%w: missing or malformed %s", ErrMalformedPayload, h.opts.Protocol.DeliveryHeaders[0])
	}
	payload, err := jsonPayload(r.Header.Get("Content-Type"), body)
	if err != nil {
		return nil, err
	}
	ev, err := h.opts.Protocol.Parse(out.Event, out.Delivery, payload)
	if err != nil {
		return nil, err
	}
	if pr, ok := ev.(*PullRequestEvent); ok && pr.Draft && !h.opts.ReviewDrafts {
		ev = &Ignored{DeliveryID: pr.DeliveryID, Event: out.Event, Action: pr.Action, Reason: "draft pull request"}
	}
	return ev, nil
}

func actionOf(ev Event) string {
	switch e := ev.(type) {
	case *PullRequestEvent:
		return e.Action
	case *InstallationEvent:
		return e.Action
	case *ThreadResolvedEvent:
		return "resolved"
	case *ReviewCommandEvent:
		if e.Edited {
			return "edited"
		}
		return "created"
	}
	return ""
}

// jsonPayload returns the JSON document of a delivery: the body itself, or the payload field of
// a form-encoded one (a webhook configured with content type application/x-www-form-urlencoded).
func jsonPayload(contentType string, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: form body: %v", ErrMalformedPayload, err)
	}
	return []byte(form.Get("payload")), nil
}

func writeWebhookReply(w http.ResponseWriter, status int, result, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Result string `json:"result"`
		Reason string `json:"reason,omitempty"`
	}{result, reason})
}
