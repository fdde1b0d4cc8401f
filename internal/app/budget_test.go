package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/testkit"
)

// TestHeldOpenWebhookBodiesAreBounded is SECURITY H7 on the real server (Serve on a
// loopback port, the default budget): 20 bodies of 24 MiB with a well-formed but wrong
// signature, and 5 without one, are held open at once. The unsigned ones are refused before
// a byte is read; of the others only what fits the budget is reserved, the rest are answered
// 429 with Retry-After at once; the reservation counter never passes the budget; a signed
// delivery sent meanwhile is accepted (or told to retry, and accepted on the retry); the
// held bodies are cut off by the body deadline; nothing but the signed delivery is stored.
func TestHeldOpenWebhookBodiesAreBounded(t *testing.T) {
	budget := github.NewBodyBudget(config.DefaultAppWebhookInflightBytes)
	h := newHarness(t, harnessOptions{reviewer: &scripted{}, budget: budget, bodyTimeout: 5 * time.Second})
	base := h.git.Commit("", "base", map[string]string{"main.go": baseMain})
	head := h.git.Commit(base, "change", map[string]string{"main.go": baseMain + "// BUG\n"})
	h.openPR(1, base, head)
	addr := strings.TrimPrefix(h.url, "http://")

	const bodyBytes = 24 << 20
	first := []byte(strings.Repeat(" ", 1<<20)) // a MiB of each, then nothing
	var held, unsigned []<-chan int
	for i := range 20 {
		hdr := http.Header{github.EventHeader: {"pull_request"}, github.DeliveryHeader: {fmt.Sprintf("held-%d", i)},
			github.SignatureHeader: {github.Sign([]byte("not the secret"), first)}}
		held = append(held, githubtest.HeldDelivery(t, addr, hdr, bodyBytes, first))
	}
	for i := range 5 {
		hdr := http.Header{github.EventHeader: {"pull_request"}, github.DeliveryHeader: {fmt.Sprintf("unsigned-%d", i)}}
		unsigned = append(unsigned, githubtest.HeldDelivery(t, addr, hdr, bodyBytes, first))
	}
	fits := int(budget.Max() / bodyBytes)
	testkit.WaitFor(t, "the bodies that fit to be reserved", 10*time.Second, func() bool { return budget.InUse() == int64(fits)*bodyBytes })
	for i, c := range unsigned {
		if got := testkit.Receive(t, c, 5*time.Second); got != http.StatusUnauthorized {
			t.Errorf("unsigned body %d: %d, want 401", i, got)
		}
	}
	// Everything past the budget is answered now, long before the body deadline.
	answered := map[int]int{}
	testkit.WaitFor(t, "the bodies past the budget to be answered", 3*time.Second, func() bool {
		for i, c := range held {
			select {
			case got := <-c:
				answered[i] = got
			default:
			}
		}
		return len(answered) >= 20-fits
	})
	var pending []<-chan int
	for i, c := range held {
		got, ok := answered[i]
		switch {
		case !ok:
			pending = append(pending, c)
		case got != http.StatusTooManyRequests:
			t.Errorf("held body %d past the budget: %d, want 429", i, got)
		}
	}
	busy := len(answered)
	if len(pending) != fits {
		t.Fatalf("%d answered, %d still reading; want %d and %d", busy, len(pending), 20-fits, fits)
	}

	// A signed delivery meanwhile: accepted beside the held bodies, or told to retry.
	body := h.prEvent("opened", 1, head, base, "")
	status := h.deliver("pull_request", "signed", body)
	if status == http.StatusTooManyRequests {
		testkit.WaitFor(t, "the held reservations to time out", 10*time.Second, func() bool { return budget.InUse() == 0 })
		status = h.deliver("pull_request", "signed", body)
	}
	if status != http.StatusAccepted {
		t.Fatalf("signed delivery beside held bodies: %d, want 202", status)
	}
	for i, c := range pending {
		if got := testkit.Receive(t, c, 10*time.Second); got != http.StatusRequestTimeout {
			t.Errorf("held body %d: %d, want 408 after the body deadline", i, got)
		}
	}
	testkit.WaitFor(t, "every reservation to be given back", 5*time.Second, func() bool { return budget.InUse() == 0 })
	if p := budget.Peak(); p > budget.Max() {
		t.Fatalf("peak reservation %d over the budget %d", p, budget.Max())
	}
	h.waitHistory(1, 1, 20*time.Second)
	c, err := h.store.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Deliveries != 1 || h.jobs() != 1 {
		t.Fatalf("counts %+v, %d jobs: want only the signed delivery", c, h.jobs())
	}
	t.Logf("budget %d MiB: %d held bodies reserved, %d refused with 429, peak reservation %d MiB",
		budget.Max()>>20, fits, busy, budget.Peak()>>20)
}
