package github

import (
	"context"
	"fmt"
	"slices"

	"github.com/asterhq/aster/internal/publish"
)

// ThreadsAPI is what ResolveThreads needs of GitHub; *Client implements it.
type ThreadsAPI interface {
	ListReviewThreads(ctx context.Context, number int) ([]ReviewThread, error)
	ResolveReviewThread(ctx context.Context, threadID string) error
	ReplyToReviewComment(ctx context.Context, number int, commentID int64, body string) (ReviewComment, error)
}

var _ ThreadsAPI = (*Client)(nil)

// ResolveOptions is the input of ResolveThreads.
type ResolveOptions struct {
	Number      int
	Resolutions []publish.Resolution
	// BotLogin is the App's login: only threads it opened are touched, and only its
	// replies count. Empty trusts every author, which only tests should do.
	BotLogin string
}

// ResolveResult counts what ResolveThreads did.
type ResolveResult struct {
	Replied, Resolved int
	// NoThread counts resolutions without a thread Aster opened (a finding listed in the
	// review body, a thread deleted); LeftToHuman those whose thread someone else resolved.
	NoThread, LeftToHuman int
}

// ResolveThreads closes the thread of each resolution: it replies once (a reply of the bot
// carrying the resolution's marker counts as done) and then resolves the thread. Replying
// first means a retry after any failure finds either no reply (and does both) or the reply
// (and only resolves): the reply is never posted twice, nor a thread left open after its
// reply. A thread resolved by someone else without Aster's reply is left as it is.
func ResolveThreads(ctx context.Context, api ThreadsAPI, opts ResolveOptions) (ResolveResult, error) {
	var res ResolveResult
	if len(opts.Resolutions) == 0 {
		return res, nil
	}
	threads, err := api.ListReviewThreads(ctx, opts.Number)
	if err != nil {
		return res, fmt.Errorf("read review threads: %w", err)
	}
	ours := func(author string) bool { return opts.BotLogin == "" || author == opts.BotLogin }
	byID := map[string]ReviewThread{}
	for _, t := range threads {
		if len(t.Comments) == 0 || !ours(t.Comments[0].Author) {
			continue
		}
		for _, id := range publish.Markers(t.Comments[0].Body) {
			if _, dup := byID[id]; !dup {
				byID[id] = t
			}
		}
	}
	for _, r := range opts.Resolutions {
		t, ok := byID[r.ID]
		if !ok {
			res.NoThread++
			continue
		}
		replied := slices.ContainsFunc(t.Comments[1:], func(c ThreadComment) bool {
			return ours(c.Author) && slices.Contains(publish.ResolvedMarkers(c.Body), r.ID)
		})
		if t.Resolved && !replied {
			res.LeftToHuman++
			continue
		}
		if !replied {
			if _, err := api.ReplyToReviewComment(ctx, opts.Number, t.Comments[0].ID, r.Reply); err != nil {
				return res, fmt.Errorf("reply in a resolved thread: %w", err)
			}
			res.Replied++
		}
		if !t.Resolved {
			if err := api.ResolveReviewThread(ctx, t.ID); err != nil {
				return res, fmt.Errorf("resolve thread: %w", err)
			}
			res.Resolved++
		}
	}
	return res, nil
}
