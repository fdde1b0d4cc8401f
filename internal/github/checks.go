package github

import (
	"context"
	"fmt"
	"time"

	gh "github.com/google/go-github/v81/github"
)

// MaxAnnotationsPerRequest is GitHub's limit of annotations in one check-run request.
const MaxAnnotationsPerRequest = 50

// Annotation is one line-anchored note of a check run.
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int    // 0 means StartLine
	Level     string // notice, warning, failure
	Title     string
	Message   string
}

// CheckRunOptions is the state of a check run to create or update. HeadSHA is sent to GitHub
// only on create (other forges, whose commit statuses are per commit, need it on every
// update too). Output (Title, Summary, Text, Annotations) is sent when Title is set.
type CheckRunOptions struct {
	Name        string
	HeadSHA     string
	Status      string // queued, in_progress, completed
	Conclusion  string // with completed: success, failure, neutral, skipped, ...
	ExternalID  string
	DetailsURL  string
	StartedAt   time.Time
	CompletedAt time.Time
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation // at most MaxAnnotationsPerRequest; see PublishCheckRun for more
}

// CheckRun identifies a check run.
type CheckRun struct {
	ID         int64
	Status     string
	Conclusion string
	ExternalID string // what the creator set: Aster's job id
	// Annotations counts the annotations the run holds (GitHub's output.annotations_count).
	Annotations int
}

func checkRunOf(run *gh.CheckRun) CheckRun {
	return CheckRun{ID: run.GetID(), Status: run.GetStatus(), Conclusion: run.GetConclusion(), ExternalID: run.GetExternalID(),
		Annotations: run.GetOutput().GetAnnotationsCount()}
}

func (o CheckRunOptions) output() (*gh.CheckRunOutput, error) {
	if len(o.Annotations) > MaxAnnotationsPerRequest {
		return nil, &APIError{Op: "check run", class: ErrInvalid,
			Message: fmt.Sprintf("%d annotations in one request, GitHub takes %d", len(o.Annotations), MaxAnnotationsPerRequest)}
	}
	if o.Title == "" {
		return nil, nil
	}
	out := &gh.CheckRunOutput{Title: gh.Ptr(o.Title), Summary: gh.Ptr(o.Summary)}
	if o.Text != "" {
		out.Text = gh.Ptr(o.Text)
	}
	for _, a := range o.Annotations {
		end := a.EndLine
		if end < a.StartLine {
			end = a.StartLine
		}
		ann := &gh.CheckRunAnnotation{Path: gh.Ptr(a.Path), StartLine: gh.Ptr(a.StartLine), EndLine: gh.Ptr(end),
			AnnotationLevel: gh.Ptr(a.Level), Message: gh.Ptr(a.Message)}
		if a.Title != "" {
			ann.Title = gh.Ptr(a.Title)
		}
		out.Annotations = append(out.Annotations, ann)
	}
	return out, nil
}

func timestamp(t time.Time) *gh.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &gh.Timestamp{Time: t.UTC().Truncate(time.Second)}
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CreateCheckRun creates a check run on opts.HeadSHA.
func (c *Client) CreateCheckRun(ctx context.Context, opts CheckRunOptions) (CheckRun, error) {
	output, err := opts.output()
	if err != nil {
		return CheckRun{}, err
	}
	req := gh.CreateCheckRunOptions{
		Name: opts.Name, HeadSHA: opts.HeadSHA, Status: strPtr(opts.Status), Conclusion: strPtr(opts.Conclusion),
		ExternalID: strPtr(opts.ExternalID), DetailsURL: strPtr(opts.DetailsURL),
		StartedAt: timestamp(opts.StartedAt), CompletedAt: timestamp(opts.CompletedAt), Output: output,
	}
	// Not repeated on a 5xx, which may come after GitHub created the run: the job's retry
	// finds that run by its external id instead of creating a second.
	return call(ctx, c, "create check run", false, func(ctx context.Context) (*gh.CheckRun, *gh.Response, error) {
		return c.api.Checks.CreateCheckRun(ctx, c.owner, c.repo, req)
	}, checkRunOf)
}

// UpdateCheckRun updates a check run; opts.Name is required (GitHub renames otherwise).
// Annotations sent here are added to the ones the run already has.
func (c *Client) UpdateCheckRun(ctx context.Context, id int64, opts CheckRunOptions) (CheckRun, error) {
	if opts.Name == "" {
		return CheckRun{}, &APIError{Op: "update check run", class: ErrInvalid, Message: "empty name"}
	}
	output, err := opts.output()
	if err != nil {
		return CheckRun{}, err
	}
	req := gh.UpdateCheckRunOptions{
		Name: opts.Name, Status: strPtr(opts.Status), Conclusion: strPtr(opts.Conclusion),
		ExternalID: strPtr(opts.ExternalID), DetailsURL: strPtr(opts.DetailsURL),
		CompletedAt: timestamp(opts.CompletedAt), Output: output,
	}
	// An update that adds annotations is not repeated on a 5xx (GitHub may have added them):
	// the job's retry counts what the run holds and sends the rest.
	return call(ctx, c, "update check run", len(opts.Annotations) == 0, func(ctx context.Context) (*gh.CheckRun, *gh.Response, error) {
		return c.api.Checks.UpdateCheckRun(ctx, c.owner, c.repo, id, req)
	}, checkRunOf)
}

// GetCheckRun reads one check run.
func (c *Client) GetCheckRun(ctx context.Context, id int64) (CheckRun, error) {
	return call(ctx, c, "get check run", true, func(ctx context.Context) (*gh.CheckRun, *gh.Response, error) {
		return c.api.Checks.GetCheckRun(ctx, c.owner, c.repo, id)
	}, checkRunOf)
}

// ListCheckRuns returns the check runs named name on the commit head that this client's App
// created (all of them, not only the latest), so that a retried job can find the run an
// earlier attempt created before it could record its id.
func (c *Client) ListCheckRuns(ctx context.Context, head, name string) ([]CheckRun, error) {
	opts := gh.ListCheckRunsOptions{CheckName: gh.Ptr(name), Filter: gh.Ptr("all")}
	if c.appID > 0 {
		opts.AppID = gh.Ptr(c.appID)
	}
	return listAll(ctx, c, "list check runs",
		func(ctx context.Context, lo gh.ListOptions) ([]*gh.CheckRun, *gh.Response, error) {
			o := opts
			o.ListOptions = lo
			res, resp, err := c.api.Checks.ListCheckRunsForRef(ctx, c.owner, c.repo, head, &o)
			if err != nil {
				return nil, resp, err
			}
			return res.CheckRuns, resp, nil
		}, checkRunOf)
}

// AnnotationBatches splits annotations into requests of at most MaxAnnotationsPerRequest.
func AnnotationBatches(anns []Annotation) [][]Annotation {
	var out [][]Annotation
	for len(anns) > MaxAnnotationsPerRequest {
		out = append(out, anns[:MaxAnnotationsPerRequest:MaxAnnotationsPerRequest])
		anns = anns[MaxAnnotationsPerRequest:]
	}
	if len(anns) > 0 {
		out = append(out, anns)
	}
	return out
}
