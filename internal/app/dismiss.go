package app

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/publish"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/store"
)

// ackMarker marks Aster's answer to one command comment, so it answers once.
var ackMarker = regexp.MustCompile(`<!-- aster:ack=([0-9]{1,20}) -->`)

// threadDecision is what the thread of one finding says: dismissed by whom and why, or
// undismissed, and the command comments still to answer.
type threadDecision struct {
	id        string
	dismiss   *store.Dismissal // nil: no dismissal asked
	undismiss bool
	answers   []threadAnswer
}

type threadAnswer struct {
	to   int64 // the thread's first comment (replies join its thread)
	cmd  int64 // the command comment answered
	body string
}

// dismissals reads the threads Aster opened on the pull request for what people said
// there — "/aster ignore [reason]" or "/aster unignore" by someone with write access (the
// last such command wins), or resolving the thread of a finding still present — records
// it in the store, answers each command once in its thread, and takes every finding and
// model comment the repository has dismissed out of rep. When the threads cannot be read,
// what the store holds still applies.
func (r *run) dismissals(ctx context.Context, rep *review.Report, number int) {
	present, findingIDs, commentIDs := presentOf(rep)
	pull := r.job.Pull
	if err := r.threadCommands(ctx, number, present); err != nil {
		r.log.Warn("review threads unreadable: earlier dismissals still apply", "err", err)
	}
	ds, err := r.w.opts.Jobs.Dismissals(ctx, pull.Owner, pull.Repo)
	if err != nil {
		r.log.Warn("dismissals unreadable: none applied this time", "err", err)
		return
	}
	by := map[string]string{}
	for _, d := range ds {
		by[d.FindingID] = d.By
	}
	var d review.Dismissed
	for i, id := range findingIDs {
		if who, ok := by[id]; ok && rep.Findings[i].Reported {
			if d.Findings == nil {
				d.Findings = map[int]string{}
			}
			d.Findings[i] = who
		}
	}
	for i, id := range commentIDs {
		if who, ok := by[id]; ok {
			if d.Comments == nil {
				d.Comments = map[int]string{}
			}
			d.Comments[i] = who
		}
	}
	review.ApplyDismissals(rep, d)
}

// presentOf returns what a review found, by identity (id → path), and the identities of its
// findings and model comments in their order.
func presentOf(rep *review.Report) (present map[string]string, findingIDs, commentIDs []string) {
	findingIDs = publish.FindingIDs(rep.Findings)
	present = map[string]string{}
	for i, f := range rep.Findings {
		present[findingIDs[i]] = f.Path
	}
	commentIDs = make([]string, len(rep.Model.Comments))
	for i, c := range rep.Model.Comments {
		commentIDs[i] = publish.CommentID(c)
		present[commentIDs[i]] = c.Path
	}
	return present, findingIDs, commentIDs
}

// threadCommands records what the threads say and answers the commands.
func (r *run) threadCommands(ctx context.Context, number int, present map[string]string) error {
	bot, err := r.w.opts.GitHub.BotLogin(ctx)
	if err != nil {
		return fmt.Errorf("app login: %w", err)
	}
	threads, err := r.api.ListReviewThreads(ctx, number)
	if err != nil {
		return err
	}
	perms := map[string]bool{}
	mayWrite := func(user string) bool {
		if ok, seen := perms[user]; seen {
			return ok
		}
		p, err := r.api.GetPermission(ctx, user)
		ok := err == nil && p.CanTrigger()
		if err != nil {
			r.log.Warn("permission of a thread's author unreadable", "user", user, "err", err)
		}
		perms[user] = ok
		return ok
	}
	pull := r.job.Pull
	for _, t := range threads {
		dec := decideThread(t, bot, present, mayWrite)
		if dec == nil {
			continue
		}
		switch {
		case dec.undismiss:
			if _, err := r.w.opts.Jobs.Undismiss(ctx, pull.Owner, pull.Repo, dec.id); err != nil {
				return err
			}
		case dec.dismiss != nil:
			d := *dec.dismiss
			d.Owner, d.Repo, d.Number = pull.Owner, pull.Repo, number
			if _, err := r.w.opts.Jobs.Dismiss(ctx, d); err != nil {
				return err
			}
		}
		for _, a := range dec.answers {
			if _, err := r.api.ReplyToReviewComment(ctx, number, a.to, a.body); err != nil {
				return fmt.Errorf("answer a command: %w", err)
			}
		}
	}
	return nil
}

// decideThread reads one thread: nil unless Aster opened it and someone said something
// that counts. mayWrite tells whether a person has write access to the repository.
func decideThread(t github.ReviewThread, bot string, present map[string]string, mayWrite func(string) bool) *threadDecision {
	if len(t.Comments) == 0 || t.Comments[0].Author != bot {
		return nil
	}
	ids := publish.Markers(t.Comments[0].Body)
	if len(ids) == 0 {
		return nil
	}
	dec := &threadDecision{id: ids[0]}
	first := t.Comments[0].ID
	answered := map[int64]bool{}
	for _, c := range t.Comments[1:] {
		if c.Author != bot {
			continue
		}
		for _, m := range ackMarker.FindAllStringSubmatch(c.Body, -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			answered[n] = true
		}
	}
	commanded := false
	for _, c := range t.Comments[1:] {
		word, reason, ok := github.ThreadCommandOf(c.Body)
		if c.Author == bot || !ok {
			continue
		}
		who := safetext.Code(c.Author, 60)
		if !mayWrite(c.Author) {
			if !answered[c.ID] {
				dec.answers = append(dec.answers, threadAnswer{to: first, cmd: c.ID,
					body: ack(c.ID, fmt.Sprintf("`/aster %s` by %s ignored: it needs write access to the repository.", word, who))})
			}
			continue
		}
		commanded = true
		if word == "unignore" {
			dec.dismiss, dec.undismiss = nil, true
			if !answered[c.ID] {
				dec.answers = append(dec.answers, threadAnswer{to: first, cmd: c.ID,
					body: ack(c.ID, fmt.Sprintf("Undone by %s: Aster raises this finding again when it is still there.", who))})
			}
			continue
		}
		dec.undismiss = false
		dec.dismiss = &store.Dismissal{FindingID: dec.id, Path: present[dec.id], By: c.Author, Reason: reason}
		if !answered[c.ID] {
			dec.answers = append(dec.answers, threadAnswer{to: first, cmd: c.ID,
				body: ack(c.ID, fmt.Sprintf("Dismissed by %s: Aster will not raise this finding again on this repository. Reply `/aster unignore` to undo.", who))})
		}
	}
	if !commanded && t.Resolved && t.ResolvedBy != "" && t.ResolvedBy != bot {
		// A person resolved the thread of a finding that is still there: a dismissal.
		if _, still := present[dec.id]; still && mayWrite(t.ResolvedBy) {
			dec.dismiss = &store.Dismissal{FindingID: dec.id, Path: present[dec.id], By: t.ResolvedBy, Reason: "resolved the thread"}
		}
	}
	if dec.dismiss == nil && !dec.undismiss && len(dec.answers) == 0 {
		return nil
	}
	return dec
}

// ack is an answer to command comment id, carrying its marker.
func ack(id int64, text string) string {
	return strings.TrimRight(safetext.StripMarkers(text), "\n") + "\n\n<!-- aster:ack=" + strconv.FormatInt(id, 10) + " -->"
}
