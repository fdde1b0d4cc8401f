package github

import "net/http"

// Protocol is how a forge signs and labels its webhook deliveries, and how their bodies
// become Events: the one seam that lets the webhook handler (its budget, deadlines,
// verification before parsing, Sink, metrics) serve another forge. The zero value is
// GitHub's.
type Protocol struct {
	// SignatureHeaders carry the HMAC-SHA256 of the raw body; the first one present is
	// verified. SignaturePrefix starts its value ("sha256=" for GitHub, nothing for
	// Gitea's bare hex).
	SignatureHeaders []string
	SignaturePrefix  string
	// EventHeaders and DeliveryHeaders name the event and the delivery id; the first one
	// present counts. They are not covered by the signature.
	EventHeaders    []string
	DeliveryHeaders []string
	// Parse turns a verified body into an Event (ParseEvent for GitHub).
	Parse func(event, deliveryID string, body []byte) (Event, error)
}

// GitHubProtocol is GitHub's: X-Hub-Signature-256 ("sha256=<hex>"), X-GitHub-Event,
// X-GitHub-Delivery, ParseEvent.
func GitHubProtocol() Protocol {
	return Protocol{SignatureHeaders: []string{SignatureHeader}, SignaturePrefix: signaturePrefix,
		EventHeaders: []string{EventHeader}, DeliveryHeaders: []string{DeliveryHeader}, Parse: ParseEvent}
}

// orGitHub is p, or GitHub's protocol when p is the zero value.
func (p Protocol) orGitHub() Protocol {
	if p.Parse == nil && len(p.SignatureHeaders) == 0 {
		return GitHubProtocol()
	}
	return p
}

// first returns the first of names present in h, and its value.
func first(h http.Header, names []string) (name, value string) {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return n, v
		}
	}
	if len(names) > 0 {
		return names[0], ""
	}
	return "", ""
}
