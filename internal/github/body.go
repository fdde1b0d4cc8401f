package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"

	"github.com/asterhq/aster/internal/bytebudget"
)

// BodyBudget bounds the webhook body bytes all requests of one server hold in memory at once.
// A request reserves its Content-Length before reading a byte (a chunked one reserves as its
// buffer grows) and gives it back when it is done with the bytes; a reservation that does not
// fit is refused at once (ErrBusy) instead of waited for, so held-open bodies cannot queue up
// memory behind them. Safe for concurrent use.
type BodyBudget = bytebudget.Budget

// NewBodyBudget returns a budget of maxBytes. NewWebhookHandler refuses one smaller than its
// largest body, which could then never be read.
func NewBodyBudget(maxBytes int64) *BodyBudget { return bytebudget.New(maxBytes) }

// chunkedStep is the first buffer of a body without a Content-Length; it doubles from there.
const chunkedStep = 64 << 10

// signedBody is a webhook body read within a budget, its HMAC computed on the way in.
type signedBody struct {
	data     []byte
	budget   *BodyBudget
	reserved int64
}

// Release gives the body's reservation back; the bytes must not be used afterwards.
func (s *signedBody) Release() {
	if s.reserved > 0 {
		s.budget.Give(s.reserved)
		s.reserved = 0
	}
	s.data = nil
}

// readSigned checks the signature header's form before reading anything (a missing or
// malformed one is refused without touching the body), refuses a declared size over maxBytes
// at once, reserves the body in budget, reads it while computing its HMAC under secret, and
// compares. Nothing is read past maxBytes+1, so the check never waits for more than the cap.
// On success the caller owns the reservation and must Release it.
func readSigned(r *http.Request, secret []byte, sig signature, maxBytes int64, budget *BodyBudget) (*signedBody, error) {
	want, err := sig.parse(secret)
	if err != nil {
		return nil, err
	}
	if r.ContentLength > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes declared, cap %d", ErrBodyTooLarge, r.ContentLength, maxBytes)
	}
	mac := hmac.New(sha256.New, secret)
	body := &signedBody{budget: budget}
	if r.ContentLength >= 0 {
		err = body.readKnown(r.Body, mac, r.ContentLength)
	} else {
		err = body.readChunked(r.Body, mac, maxBytes)
	}
	if err != nil {
		body.Release()
		return nil, err
	}
	if !hmac.Equal(want, mac.Sum(nil)) {
		body.Release()
		return nil, fmt.Errorf("%w: signature mismatch", ErrBadSignature)
	}
	return body, nil
}

func (s *signedBody) grow(n int64) error {
	if ok, _ := s.budget.TryTake(n); !ok {
		// The answer goes to an unauthenticated client: the budget, not the current load.
		return fmt.Errorf("%w: %d more bytes do not fit the budget of %d", ErrBusy, n, s.budget.Max())
	}
	s.reserved += n
	return nil
}

// readKnown reads a body of a declared length into one buffer of exactly that size.
func (s *signedBody) readKnown(r io.Reader, mac hash.Hash, n int64) error {
	if err := s.grow(n); err != nil {
		return err
	}
	s.data = make([]byte, n)
	if _, err := io.ReadFull(io.TeeReader(r, mac), s.data); err != nil {
		return readError(err)
	}
	return nil
}

// readChunked reads a body of unknown length, reserving each larger buffer before it is
// allocated and giving the smaller one back after the copy, so the reservation covers
// every byte the buffers hold at any moment.
func (s *signedBody) readChunked(r io.Reader, mac hash.Hash, maxBytes int64) error {
	r = io.TeeReader(r, mac)
	for {
		if len(s.data) == cap(s.data) {
			if int64(len(s.data)) > maxBytes {
				return fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, maxBytes)
			}
			next := min(max(2*int64(cap(s.data)), chunkedStep), maxBytes+1)
			if err := s.grow(next); err != nil {
				return err
			}
			buf := make([]byte, len(s.data), next)
			copy(buf, s.data)
			old := int64(cap(s.data))
			s.data = buf
			s.budget.Give(old)
			s.reserved -= old
		}
		n, err := r.Read(s.data[len(s.data):cap(s.data)])
		s.data = s.data[:len(s.data)+n]
		if errors.Is(err, io.EOF) {
			if int64(len(s.data)) > maxBytes {
				return fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, maxBytes)
			}
			return nil
		}
		if err != nil {
			return readError(err)
		}
	}
}

func readError(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: not complete within the read deadline", ErrBodyTimeout)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: body shorter than its Content-Length", ErrMalformedPayload)
	}
	return fmt.Errorf("%w: read body: %v", ErrMalformedPayload, err)
}
