package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asterhq/aster/internal/backoff"
)

// ClientOptions bound what one review may spend on the model. Zero values
// mean "no limit" for caps and "none" for waits; config supplies the defaults.
type ClientOptions struct {
	// CallTimeout bounds each HTTP attempt.
	CallTimeout time.Duration
	// MaxRetries is the number of retries after the first attempt, on 429,
	// 5xx, overload, connection errors and per-call timeouts.
	MaxRetries int
	// BackoffBase and BackoffMax shape the exponential backoff used when the
	// server sends no Retry-After.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxRetryAfter is the longest server-requested wait honoured; a longer
	// one ends the retries at once (the review says the model was skipped).
	MaxRetryAfter time.Duration
	// MaxCalls caps the model calls of one review (retries not counted).
	MaxCalls int
	// MaxOutputTokens fills requests that set none.
	MaxOutputTokens int64
	// MaxTotalTokens caps input plus output tokens over the review; a call
	// whose estimate would pass it is not sent.
	MaxTotalTokens int64
	// MaxCostUSD caps the review's cost when the model's price is known; a
	// call whose worst case would pass it is not sent.
	MaxCostUSD float64
	Prices     PriceTable
	Logger     *slog.Logger

	// Sleep, Now and Rand are for tests; nil uses the real clock.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
	Rand  func() float64
}

// Stats is what a review spent on the model.
type Stats struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Calls are model calls started; Attempts count HTTP attempts including
	// retries; Retries = Attempts - Calls when every call got an answer.
	Calls    int   `json:"calls"`
	Attempts int   `json:"attempts"`
	Retries  int   `json:"retries"`
	Usage    Usage `json:"usage"`
	// UsageEstimated is set when a provider reported no usage and Aster
	// counted with its own estimate.
	UsageEstimated bool    `json:"usage_estimated,omitempty"`
	CostUSD        float64 `json:"cost_usd"`
	// CostKnown is false when the price table has no entry for the model.
	CostKnown bool `json:"cost_known"`
	// Truncated counts answers cut at the output token cap.
	Truncated int `json:"truncated,omitempty"`
}

// Client wraps a Provider with the policy every review shares. It is safe for
// concurrent use; budgets are reserved before a call and settled after it.
type Client struct {
	p   Provider
	o   ClientOptions
	log *slog.Logger

	mu             sync.Mutex
	st             Stats
	reservedTokens int64
	reservedCost   float64
}

// NewClient returns a Client around p.
func NewClient(p Provider, o ClientOptions) *Client {
	if o.Sleep == nil {
		o.Sleep = backoff.Sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	_, known := o.Prices.Lookup(p.Model())
	return &Client{p: p, o: o, log: log.With("provider", p.Name(), "model", p.Model()),
		st: Stats{Provider: p.Name(), Model: p.Model(), CostKnown: known}}
}

// Provider returns the wrapped provider.
func (c *Client) Provider() Provider { return c.p }

// Stats returns what was spent so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// CallsLeft returns how many calls the cap still allows (-1: no cap).
func (c *Client) CallsLeft() int {
	if c.o.MaxCalls <= 0 {
		return -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, c.o.MaxCalls-c.st.Calls)
}

// Complete sends req, retrying transient failures, within the review's caps.
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	if req.MaxOutputTokens <= 0 {
		req.MaxOutputTokens = c.o.MaxOutputTokens
	}
	estIn := EstimateRequestTokens(req)
	tokens, cost, err := c.reserve(estIn, req.MaxOutputTokens)
	if err != nil {
		return Response{}, err
	}
	resp, attempts, err := c.attempt(ctx, req)
	c.settle(tokens, cost, req, estIn, resp, attempts, err)
	return resp, err
}

// reserve counts the call and holds its worst case against the caps.
func (c *Client) reserve(estIn, maxOut int64) (int64, float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := c.p.Name()
	if c.o.MaxCalls > 0 && c.st.Calls >= c.o.MaxCalls {
		return 0, 0, &Error{Kind: KindCallCap, Provider: name,
			msg: fmt.Sprintf("the review's cap of %d model calls is used up", c.o.MaxCalls)}
	}
	tokens := estIn + maxOut
	if c.o.MaxTotalTokens > 0 {
		used := c.st.Usage.InputTokens + c.st.Usage.OutputTokens + c.reservedTokens
		if used+tokens > c.o.MaxTotalTokens {
			return 0, 0, &Error{Kind: KindBudget, Provider: name,
				msg: fmt.Sprintf("call needs up to %d tokens; %d of the review's %d are used or reserved", tokens, used, c.o.MaxTotalTokens)}
		}
	}
	var cost float64
	if price, ok := c.o.Prices.Lookup(c.p.Model()); ok {
		cost = price.Cost(Usage{InputTokens: estIn, OutputTokens: maxOut})
		if c.o.MaxCostUSD > 0 && c.st.CostUSD+c.reservedCost+cost > c.o.MaxCostUSD {
			return 0, 0, &Error{Kind: KindBudget, Provider: name,
				msg: fmt.Sprintf("call may cost up to $%.4f; $%.4f of the review's $%.4f cap is spent or reserved", cost, c.st.CostUSD+c.reservedCost, c.o.MaxCostUSD)}
		}
	}
	c.st.Calls++
	c.reservedTokens += tokens
	c.reservedCost += cost
	return tokens, cost, nil
}

func (c *Client) settle(tokens int64, cost float64, req Request, estIn int64, resp Response, attempts int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reservedTokens -= tokens
	c.reservedCost -= cost
	c.st.Attempts += attempts
	c.st.Retries += max(0, attempts-1)
	if err != nil {
		return
	}
	u := resp.Usage
	if u.InputTokens == 0 && u.OutputTokens == 0 {
		// Some local servers report nothing; count our estimate so the caps hold.
		u.InputTokens = estIn
		out := EstimateTokens(resp.Text)
		for _, tc := range resp.ToolCalls {
			out += EstimateTokens(tc.Name) + EstimateTokensBytes(int64(len(tc.Arguments)))
		}
		u.OutputTokens = out
		c.st.UsageEstimated = true
	}
	c.st.Usage = c.st.Usage.Add(u)
	if price, ok := c.o.Prices.Lookup(c.p.Model()); ok {
		c.st.CostUSD += price.Cost(u)
	}
	if resp.Stop == StopLength {
		c.st.Truncated++
	}
}

// attempt runs the retry loop. It returns how many HTTP attempts it made.
func (c *Client) attempt(ctx context.Context, req Request) (Response, int, error) {
	name := c.p.Name()
	for n := 0; ; n++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if c.o.CallTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.o.CallTimeout)
		}
		resp, err := c.p.Complete(actx, req)
		cancel()
		if err == nil {
			return resp, n + 1, nil
		}
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Kind: KindUnavailable, Provider: name, msg: "provider returned an unclassified error"}
		}
		if ctx.Err() != nil {
			return Response{}, n + 1, &Error{Kind: KindCanceled, Provider: name, msg: ctx.Err().Error(), cause: ctx.Err(), Attempts: n + 1}
		}
		e.Attempts = n + 1
		if !e.Retryable() || n >= c.o.MaxRetries {
			return Response{}, n + 1, e
		}
		wait := backoff.Delay(n, c.o.BackoffBase, c.o.BackoffMax, c.o.Rand)
		if e.hasRetryAfter {
			if c.o.MaxRetryAfter > 0 && e.RetryAfter > c.o.MaxRetryAfter {
				e.msg = fmt.Sprintf("server asked to wait %s, over the %s Aster honours", e.RetryAfter.Round(time.Millisecond), c.o.MaxRetryAfter)
				return Response{}, n + 1, e
			}
			wait = e.RetryAfter
		}
		c.log.Warn("model call failed; retrying", "kind", e.Kind, "status", e.Status, "attempt", n+1, "wait", wait)
		if err := c.o.Sleep(ctx, wait); err != nil {
			return Response{}, n + 1, &Error{Kind: KindCanceled, Provider: name, msg: err.Error(), cause: err, Attempts: n + 1}
		}
	}
}
