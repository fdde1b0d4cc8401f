package app

import (
	"context"
	"fmt"
	"strconv"

	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/store"
)

// helpText is Aster's answer to /aster help.
const helpText = "Aster's commands, each the first line of a comment of its own, by someone with write access:\n\n" +
	"- `/aster review`: review the head now (also while paused).\n" +
	"- `/aster resolve`: re-check the open findings now (a new review of the head).\n" +
	"- `/aster pause`: review no push of this pull request until `/aster resume`.\n" +
	"- `/aster resume`: review pushes again, and the head now if it was not reviewed.\n" +
	"- `/aster help`: this list.\n\n" +
	"In a thread Aster opened: `/aster ignore [reason]` dismisses its finding on this repository and " +
	"`/aster unignore` undoes that; resolving the thread while the finding is still there dismisses it too."

// controls answers the pull request's control commands (/aster pause, resume, help) in
// place, each once, and reads its review threads when a person resolved one of Aster's or
// answered in one with a thread command, before
// anything else the job does. It reports whether that was all the job had to do: no event,
// no /aster review and no /aster resume asked for a review.
func (r *run) controls(ctx context.Context) (bool, error) {
	claim := r.claim
	r.pausedBy = claim.PausedBy
	if len(claim.Controls) == 0 && !claim.Threads {
		return false, nil
	}
	resumed := false
	if len(claim.Controls) > 0 {
		bot, err := r.w.opts.GitHub.BotLogin(ctx)
		if err != nil {
			return false, fmt.Errorf("app login: %w", err)
		}
		// Answers carry the command's id: one found is not posted again (a crash between
		// the answer and its record).
		comments, err := r.api.ListIssueComments(ctx, r.job.Pull.Number)
		if err != nil {
			return false, fmt.Errorf("read the pull request's comments: %w", err)
		}
		answered := map[int64]bool{}
		for _, c := range comments {
			if c.Author != bot {
				continue
			}
			for _, m := range ackMarker.FindAllStringSubmatch(c.Body, -1) {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				answered[n] = true
			}
		}
		perms := map[string]bool{}
		for _, c := range claim.Controls {
			may, seen := perms[c.By]
			if !seen {
				p, err := r.api.GetPermission(ctx, c.By)
				if err != nil {
					return false, fmt.Errorf("check permission of %s: %w", c.By, err)
				}
				may = p.CanTrigger()
				perms[c.By] = may
			}
			text, change := r.control(c, may)
			if change == store.PauseLifted {
				resumed = true
			}
			if !answered[c.CommentID] {
				if _, err := r.api.CreateIssueComment(ctx, r.job.Pull.Number, ack(c.CommentID, text)); err != nil {
					return false, fmt.Errorf("answer /aster %s: %w", commandLabel(c.Name), err)
				}
				answered[c.CommentID] = true
			}
			if err := r.job.ControlDone(ctx, c, change); err != nil {
				return false, err
			}
			switch change {
			case store.PauseSet:
				r.pausedBy = c.By
			case store.PauseLifted:
				r.pausedBy = ""
			}
			r.log.Info("command answered", "command", commandLabel(c.Name), "user", c.By, "permitted", may)
			r.note = append(r.note, fmt.Sprintf("/aster %s by %s", commandLabel(c.Name), c.By))
		}
	}
	if claim.Threads {
		if err := r.resolvedThreads(ctx); err != nil {
			return false, err
		}
		r.note = append(r.note, "the review threads")
	}
	if claim.Announced || claim.Force || resumed {
		return false, nil
	}
	r.rec.Cause = "command"
	if len(claim.Controls) == 0 {
		r.rec.Cause = "thread"
	}
	return true, nil
}

// commandLabel names a control command for people: a thread command given in the
// conversation is named for what was written.
func commandLabel(name string) string {
	if name == store.CmdInThread {
		return "ignore (in the conversation)"
	}
	return name
}

// control decides what one control command does and says.
func (r *run) control(c store.Control, mayWrite bool) (string, store.PauseChange) {
	who := safetext.Code(c.By, 60)
	if c.Name == store.CmdInThread {
		// Changes nothing, so anyone is told where it works.
		return "`/aster ignore` and `/aster unignore` work in a reply to one of Aster's comments on a line of the change " +
			"(its thread), where they dismiss that finding on this repository or undo it. Here, in the conversation, they do nothing.", store.PauseKeep
	}
	if !mayWrite {
		return fmt.Sprintf("`/aster %s` by %s ignored: it needs write access to the repository.", c.Name, who), store.PauseKeep
	}
	switch c.Name {
	case store.CmdPause:
		return fmt.Sprintf("Paused by %s: Aster reviews no push to this pull request until `/aster resume`; "+
			"`/aster review` still asks for one review.", who), store.PauseSet
	case store.CmdResume:
		if r.pausedBy == "" {
			return fmt.Sprintf("`/aster resume` by %s: this pull request was not paused; Aster reviews its pushes.", who), store.PauseLifted
		}
		return fmt.Sprintf("Resumed by %s: Aster reviews this pull request's pushes again, and its head now if it was not reviewed.", who), store.PauseLifted
	default:
		return helpText, store.PauseKeep
	}
}

// resolvedThreads reads the pull request's threads after a person resolved one of
// Aster's or gave a thread command in one: the commands are recorded and answered, and a
// resolved thread whose finding the last review still raised is a dismissal. Without a
// stored review nothing is present, and nothing is recorded.
func (r *run) resolvedThreads(ctx context.Context) error {
	var rep *review.Report
	if last := r.claim.LastReviewedSHA; last != "" {
		st, found, err := r.w.opts.Jobs.Run(ctx, r.job.Pull, last)
		if err != nil {
			return err
		}
		if found && st.Result != nil {
			if stored, err := readStored(st.Result); err == nil {
				rep = stored.Report
			}
		}
	}
	present := map[string]string{}
	if rep != nil {
		present, _, _ = presentOf(rep)
	}
	if err := r.threadCommands(ctx, r.job.Pull.Number, present); err != nil {
		return fmt.Errorf("read the review threads: %w", err)
	}
	return r.job.ThreadsRead(ctx)
}
