package github_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/testkit"
)

// TestWebhookBodyBudget is SECURITY H7 at the handler: a missing or malformed signature is
// refused before the body is read, a declared size over the cap at once; declared bodies
// reserve their length and chunked ones their buffer as it grows; whatever does not fit
// the budget is answered 429 with Retry-After at once; a held-open body is cut off by the
// body deadline and gives its reservation back; the counter never passes the budget.
func TestWebhookBodyBudget(t *testing.T) {
	t.Parallel()
	const maxBody, budgetBytes = 1 << 20, 2<<20 + 512<<10 // 2.5 bodies
	// Long enough that the held bodies still hold their reservations when the
	// next requests arrive on a loaded machine (at 1 s they were cut off first
	// at a load of 26, and the next request fitted).
	const bodyTimeout = 4 * time.Second
	budget := github.NewBodyBudget(budgetBytes)
	sink := &recordingSink{}
	h := newHandler(t, sink, github.WebhookOptions{MaxBodyBytes: maxBody, Budget: budget, BodyTimeout: bodyTimeout})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	bogus := http.Header{github.EventHeader: {"pull_request"}, github.DeliveryHeader: {"d-held"},
		github.SignatureHeader: {github.Sign([]byte("not the secret"), []byte("x"))}}

	// No signature, a sha1 one, an oversized declaration: answered without a byte read.
	unsigned := http.Header{github.EventHeader: {"pull_request"}, github.DeliveryHeader: {"d-unsigned"}}
	sha1 := http.Header{github.EventHeader: {"pull_request"}, github.SignatureHeader: {"sha1=0123"}}
	for name, c := range map[string]struct {
		header http.Header
		length int64
		want   int
	}{"unsigned": {unsigned, maxBody, 401}, "sha1": {sha1, maxBody, 401}, "oversized": {bogus, maxBody + 1, 413}} {
		if got := testkit.Receive(t, githubtest.HeldDelivery(t, addr, c.header, c.length, []byte("{")), 2*time.Second); got != c.want {
			t.Errorf("%s: %d, want %d", name, got, c.want)
		}
	}
	if p := budget.Peak(); p != 0 {
		t.Fatalf("refused requests reserved %d bytes", p)
	}

	// Two maximal bodies fit, the third does not; a chunked body grows into what is left
	// and is refused when its next buffer does not fit.
	var held []<-chan int
	for range 2 {
		held = append(held, githubtest.HeldDelivery(t, addr, bogus, maxBody, bytes.Repeat([]byte("a"), 1000)))
	}
	waitUntilT(t, "two reservations", func() bool { return budget.InUse() == 2*maxBody })
	third := githubtest.HeldDelivery(t, addr, bogus, maxBody, []byte("a"))
	if got := testkit.Receive(t, third, 2*time.Second); got != http.StatusTooManyRequests {
		t.Fatalf("third maximal body: %d, want 429", got)
	}
	chunked := githubtest.HeldDelivery(t, addr, bogus, -1, bytes.Repeat([]byte("b"), 600<<10))
	if got := testkit.Receive(t, chunked, 3*time.Second); got != http.StatusTooManyRequests {
		t.Fatalf("chunked body past the budget: %d, want 429", got)
	}
	// The held ones are cut off by the body deadline and give their bytes back.
	for i, c := range held {
		if got := testkit.Receive(t, c, bodyTimeout+10*time.Second); got != http.StatusRequestTimeout {
			t.Errorf("held body %d: %d, want 408", i, got)
		}
	}
	waitUntilT(t, "the reservations to be given back", func() bool { return budget.InUse() == 0 })
	if p := budget.Peak(); p > budgetBytes {
		t.Fatalf("peak reservation %d over the budget %d", p, budgetBytes)
	}

	// Retry-After is sent with the 429.
	fill := []<-chan int{githubtest.HeldDelivery(t, addr, bogus, maxBody, []byte("a")), githubtest.HeldDelivery(t, addr, bogus, maxBody, []byte("a"))}
	waitUntilT(t, "two reservations again", func() bool { return budget.InUse() == 2*maxBody })
	body := withInstallation(t, exampleFor(t, "pull_request", "opened"), 42)
	big := append(bytes.Clone(body), bytes.Repeat([]byte(" "), maxBody-len(body))...)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhook", bytes.NewReader(big))
	req.Header.Set(github.EventHeader, "pull_request")
	req.Header.Set(github.DeliveryHeader, "d-good")
	req.Header.Set(github.SignatureHeader, github.Sign(secret, big))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "4" {
		t.Fatalf("signed body past the budget: %d, Retry-After %q; want 429 with Retry-After 4", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// A small signed delivery still fits beside them.
	small := httptest.NewRequest(http.MethodPost, srv.URL+"/webhook", bytes.NewReader(body))
	small.RequestURI = ""
	small.Header.Set(github.EventHeader, "pull_request")
	small.Header.Set(github.DeliveryHeader, "d-small")
	small.Header.Set(github.SignatureHeader, github.Sign(secret, body))
	resp, err = http.DefaultClient.Do(small)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("small signed delivery beside held bodies: %d, want 202", resp.StatusCode)
	}
	for _, c := range fill {
		testkit.Receive(t, c, bodyTimeout+10*time.Second)
	}
	if n := sink.count(); n != 1 {
		t.Fatalf("%d events stored, want only the signed one", n)
	}
	if p := budget.Peak(); p > budgetBytes {
		t.Fatalf("peak reservation %d over the budget %d", p, budgetBytes)
	}
}

// TestWebhookChunkedBodyVerified: a chunked body is read within the cap, its signature
// checked on the streamed bytes.
func TestWebhookChunkedBodyVerified(t *testing.T) {
	t.Parallel()
	budget := github.NewBodyBudget(github.MaxWebhookBodyBytes)
	sink := &recordingSink{}
	srv := httptest.NewServer(newHandler(t, sink, github.WebhookOptions{Budget: budget}))
	t.Cleanup(srv.Close)
	body := withInstallation(t, exampleFor(t, "pull_request", "opened"), 42)
	for _, c := range []struct {
		sig  string
		want int
	}{{github.Sign([]byte("wrong"), body), 401}, {github.Sign(secret, body), 202}} {
		// A reader of unknown length makes the client send it chunked.
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhook", struct{ *strings.Reader }{strings.NewReader(string(body))})
		req.Header.Set(github.EventHeader, "pull_request")
		req.Header.Set(github.DeliveryHeader, "d-chunked")
		req.Header.Set(github.SignatureHeader, c.sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("chunked body: %d, want %d", resp.StatusCode, c.want)
		}
	}
	if sink.count() != 1 || budget.InUse() != 0 {
		t.Fatalf("stored %d, %d bytes still reserved", sink.count(), budget.InUse())
	}
}

func waitUntilT(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, what, 5*time.Second, cond)
}
