package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/store"
)

// Requests is what the webhook side needs of the store; *store.Store implements it.
type Requests interface {
	RequestReview(ctx context.Context, r store.ReviewRequest) (store.Enqueued, error)
	RecordInstallation(ctx context.Context, d store.Delivery, in store.Installation) error
}

var _ Requests = (*store.Store)(nil)

// Sink turns verified webhook events into durable work: a review request per pull-request
// event or /aster command, a request to read the threads when a person resolves one of
// Aster's or answers in one with a thread command, a record per installation event. It implements
// github.Sink; the webhook handler answers 202 only after Accept returned.
type Sink struct {
	Store Requests
	// Timeout bounds one Accept (default config.DefaultAppWebhookTimeout), so GitHub gets
	// an answer well within its own delivery timeout even when the database is slow.
	Timeout time.Duration
}

var _ github.Sink = (*Sink)(nil)

// Accept implements github.Sink.
func (s *Sink) Accept(ctx context.Context, ev github.Event) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = config.DefaultAppWebhookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	switch e := ev.(type) {
	case *github.PullRequestEvent:
		_, err = s.Store.RequestReview(ctx, store.ReviewRequest{
			Delivery: store.Delivery{ID: e.DeliveryID, Event: "pull_request", Action: e.Action, Repo: e.Repo.FullName(),
				Number: e.Number, HeadSHA: e.Head.SHA, Sender: e.Sender},
			Pull:           store.PullKey{Owner: e.Repo.Owner, Repo: e.Repo.Name, Number: e.Number},
			InstallationID: e.InstallationID,
			HeadSHA:        e.Head.SHA,
		})
	case *github.ReviewCommandEvent:
		// The sender's write permission is checked by the job, through the API, before
		// anything runs: the webhook path makes no GitHub call.
		// The comment id and edit time make the command run once however many delivery
		// ids its signed body is replayed under.
		// A control command (pause, resume, help) is answered by the job, in place, after
		// the same permission check; it asks for no review.
		action := "created"
		if e.Edited {
			action = "edited"
		}
		// An event without a command word (another forge's adapter) is a review command.
		control := e.Command == github.CmdPause || e.Command == github.CmdResume || e.Command == github.CmdHelp ||
			e.Command == github.CmdInThread
		req := store.ReviewRequest{
			Delivery: store.Delivery{ID: e.DeliveryID, Event: "issue_comment", Action: action, Repo: e.Repo.FullName(),
				Number: e.Number, Sender: e.Sender},
			Pull:           store.PullKey{Owner: e.Repo.Owner, Repo: e.Repo.Name, Number: e.Number},
			InstallationID: e.InstallationID,
			Force:          !control,
			By:             e.Sender,
			Command:        &store.Command{CommentID: e.CommentID, UpdatedAt: e.UpdatedAt},
		}
		if control {
			req.Command.Name = e.Command
		}
		_, err = s.Store.RequestReview(ctx, req)
	case *github.ThreadResolvedEvent:
		// The job reads the threads through the API: who resolved which, with what access.
		_, err = s.Store.RequestReview(ctx, readThreads(store.Delivery{ID: e.DeliveryID, Event: "pull_request_review_thread",
			Action: "resolved", Sender: e.Sender}, e.Repo, e.Number, e.InstallationID))
	case *github.ThreadCommandEvent:
		// The same reading of the threads: the command's author, access and thread are
		// checked there, and each command is answered once in its thread.
		_, err = s.Store.RequestReview(ctx, readThreads(store.Delivery{ID: e.DeliveryID, Event: e.Event,
			Action: e.Action, Sender: e.Sender}, e.Repo, e.Number, e.InstallationID))
	case *github.InstallationEvent:
		err = s.Store.RecordInstallation(ctx, store.Delivery{ID: e.DeliveryID, Event: "installation", Action: e.Action,
			Sender: e.Sender}, store.Installation{ID: e.InstallationID, Action: e.Action, Account: e.Account,
			Repositories: e.Repositories, Sender: e.Sender})
	default:
		return fmt.Errorf("sink: unexpected event %T", ev)
	}
	switch {
	case errors.Is(err, store.ErrDuplicateDelivery):
		return fmt.Errorf("%w: %w", github.ErrDuplicateDelivery, err)
	case errors.Is(err, store.ErrDuplicateCommand):
		return fmt.Errorf("%w: %w", github.ErrDuplicateCommand, err)
	}
	return err
}

// readThreads asks for a job that reads the pull request's review threads (a person
// resolved one of Aster's or gave a thread command in one); d names the delivery.
func readThreads(d store.Delivery, repo github.Repo, number int, installation int64) store.ReviewRequest {
	d.Repo, d.Number = repo.FullName(), number
	return store.ReviewRequest{Delivery: d, Pull: store.PullKey{Owner: repo.Owner, Repo: repo.Name, Number: number},
		InstallationID: installation, Threads: true}
}
