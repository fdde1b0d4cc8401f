package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/api"
)

// SubmitOptions are the options of an asynchronous run.
type SubmitOptions struct {
	// CallbackURL, when set, receives the run (as Run returns it) in a POST
	// when it ends, signed in api.HeaderSignature (see VerifySignature). Its
	// host must be on the server's callback allow list.
	CallbackURL string
}

// SubmitExecute starts o on the server and returns at once with the queued
// run (POST /v1/runs?kind=execute); Run or WaitRun reads it back.
// o.OnOutput is not used: an asynchronous run has no stream.
func (c *Client) SubmitExecute(ctx context.Context, o ExecuteOptions, so SubmitOptions) (api.Run, error) {
	req, err := jobRequest(o.Job)
	if err != nil {
		return api.Run{}, err
	}
	return c.submit(ctx, api.RunKindExecute, api.ExecuteRequest{Argv: o.Argv, JobRequest: req}, o.Job, so)
}

// SubmitTest is SubmitExecute for a test run (POST /v1/runs?kind=test); the
// finished run's Result is an api.TestResponse.
func (c *Client) SubmitTest(ctx context.Context, o TestOptions, so SubmitOptions) (api.Run, error) {
	req, err := jobRequest(o.Job)
	if err != nil {
		return api.Run{}, err
	}
	return c.submit(ctx, api.RunKindTest, api.TestRequest{Command: o.Command, Report: o.Report, JobRequest: req}, o.Job, so)
}

func (c *Client) submit(ctx context.Context, kind string, spec any, job Job, so SubmitOptions) (api.Run, error) {
	req, err := c.newRunRequest(ctx, api.RouteRuns, spec, job.Snapshot)
	if err != nil {
		return api.Run{}, err
	}
	q := url.Values{"kind": {kind}}
	if so.CallbackURL != "" {
		q.Set("callback_url", so.CallbackURL)
	}
	req.URL.RawQuery = q.Encode()
	req.Header.Set("Accept", api.ContentTypeJSON)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return api.Run{}, context.Cause(ctx)
		}
		return api.Run{}, fmt.Errorf("%s: %w: %v", api.RouteRuns, api.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return api.Run{}, apiError(resp)
	}
	var run api.Run
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(&run); err != nil {
		return api.Run{}, fmt.Errorf("%s: decode response: %w", api.RouteRuns, err)
	}
	return run, nil
}

// Run reads an asynchronous run: its state and, once done, its result.
func (c *Client) Run(ctx context.Context, id string) (api.Run, error) {
	var run api.Run
	err := c.get(ctx, api.RouteRunPrefix+url.PathEscape(id), &run)
	return run, err
}

// WaitRun polls Run every poll (default 1s) until the run ended (state done
// or error) or ctx ends.
func (c *Client) WaitRun(ctx context.Context, id string, poll time.Duration) (api.Run, error) {
	if poll <= 0 {
		poll = time.Second
	}
	for {
		run, err := c.Run(ctx, id)
		if err != nil || run.State == api.RunDone || run.State == api.RunError {
			return run, err
		}
		select {
		case <-ctx.Done():
			return run, context.Cause(ctx)
		case <-time.After(poll):
		}
	}
}

// Runs lists the caller's most recent runs, newest first, without their
// results (limit 0: the server's default).
func (c *Client) Runs(ctx context.Context, limit int) ([]api.Run, error) {
	route := api.RouteRuns
	if limit > 0 {
		route += "?limit=" + strconv.Itoa(limit)
	}
	var list api.RunList
	err := c.getURL(ctx, route, &list)
	return list.Runs, err
}

// Images lists the images a request may name, with their toolchains.
func (c *Client) Images(ctx context.Context) ([]api.Image, error) {
	var list api.ImageList
	err := c.get(ctx, api.RouteImages, &list)
	return list.Images, err
}

// getURL is get for a route with a query.
func (c *Client) getURL(ctx context.Context, routeAndQuery string, out any) error {
	route, query, _ := strings.Cut(routeAndQuery, "?")
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + route
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	c.decorate(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", route, api.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiError(resp)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(out)
}

// VerifySignature reports whether header (the api.HeaderSignature of a
// callback) signs body under secret, the server's callback secret. Compare
// before you trust or even parse a callback's body.
func VerifySignature(secret, body []byte, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal(sig, m.Sum(nil))
}
