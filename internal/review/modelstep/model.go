package modelstep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/llm"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/textclip"
)

// ModelOptions configure the model step.
type ModelOptions struct {
	// Client carries the provider and the review's call, token and cost
	// caps. Build one Client per review: its caps are per review.
	Client *llm.Client
	// MaxInputTokens bounds one call's prompt; MaxOutputTokens its answer.
	MaxInputTokens  int64
	MaxOutputTokens int64
	// MaxChunks is N: a change too large for one call is split into at
	// most N calls; what does not fit is left out and named.
	MaxChunks int
	// MaxComments caps the comments kept (the most severe first).
	MaxComments int
	// Sanitize shapes comment bodies (link allowlist, length cap);
	// MaxSummaryBytes caps the summary.
	Sanitize        safetext.SanitizeOptions
	MaxSummaryBytes int
	// Secrets are values that never reach the model or a comment (the API
	// key, tokens); well-known secret formats are redacted regardless.
	Secrets []string
	// Agent, when set, lets the model run tools (agentic mode): at most
	// MaxToolCalls calls per review, each result cut to MaxResultBytes.
	Agent          *Agent
	MaxToolCalls   int
	MaxResultBytes int
	Logger         *slog.Logger
	// Nonce draws the data-block nonce (tests); nil is crypto/rand.
	Nonce func() string
}

// ModelReviewer is the model step: it implements Reviewer over an llm.Client.
type ModelReviewer struct {
	o   ModelOptions
	log *slog.Logger
}

var _ review.Reviewer = (*ModelReviewer)(nil)

// NewModelReviewer returns the model step.
func NewModelReviewer(o ModelOptions) (*ModelReviewer, error) {
	if o.Client == nil {
		return nil, errors.New("model reviewer: no client")
	}
	if o.MaxInputTokens <= 0 {
		o.MaxInputTokens = 48_000
	}
	if o.MaxOutputTokens <= 0 {
		o.MaxOutputTokens = llm.DefaultMaxOutputTokens
	}
	if o.MaxChunks <= 0 {
		o.MaxChunks = 1
	}
	if o.MaxComments <= 0 {
		o.MaxComments = 25
	}
	if o.MaxSummaryBytes <= 0 {
		o.MaxSummaryBytes = 8000
	}
	if o.Nonce == nil {
		o.Nonce = newNonce
	}
	if o.Agent != nil && o.MaxToolCalls <= 0 {
		o.MaxToolCalls = 4
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 8 << 10
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ModelReviewer{o: o, log: log}, nil
}

// modelRun is the state of one review.
type modelRun struct {
	r        *ModelReviewer
	in       review.ModelInput
	rd       *safetext.Redactor
	system   string
	schema   *llm.Schema
	tools    []llm.Tool
	toolLeft int

	rep       review.ModelReport
	redacted  safetext.Redaction
	summaries []string
	comments  []modelComment
	ignored   []string
	problems  []string // one line each, for the note
	toolLog   []llm.ToolLogEntry
	okChunks  int
	failed    int
	truncated bool
}

// Review implements Reviewer. Provider failures and exhausted budgets are
// reported in the ModelReport (status failed or partial, with a note); only
// a cancelled context is returned as an error.
func (r *ModelReviewer) Review(ctx context.Context, in review.ModelInput) (review.ModelReport, error) {
	st := r.o.Client.Stats()
	run := &modelRun{r: r, in: in, rd: safetext.NewRedactor(r.o.Secrets), redacted: safetext.Redaction{},
		rep: review.ModelReport{Status: review.ModelOK, Provider: st.Provider, Model: st.Model,
			Comments: []review.Comment{}, DroppedComments: []review.DroppedComment{}, OmittedFiles: []review.OmittedFile{}}}
	if r.o.Agent != nil {
		run.tools = r.o.Agent.Tools()
		run.toolLeft = r.o.MaxToolCalls
		defer r.o.Agent.Close()
	}
	run.system = SystemPrompt(r.o.MaxComments, run.toolLeft)
	run.schema = &llm.Schema{Name: "aster_review", Schema: ReviewSchema()}
	if in.Index == nil {
		in.Index = diff.NewIndex(in.Diff)
		run.in.Index = in.Index
	}
	if len(in.Diff) == 0 {
		run.rep.Status = review.ModelSkipped
		run.rep.Note = "model review skipped: no reviewable file in the change"
		return run.rep, nil
	}
	err := run.review(ctx)
	run.finish()
	return run.rep, err
}

func (m *modelRun) review(ctx context.Context) error {
	o := m.r.o
	// The fixed part of every call (rules, schema, tools, title, body,
	// tests) is measured, not guessed; the diff gets what is left.
	probe := newPromptWriter(o.Nonce(), m.rd)
	buildPrompt(promptInput{in: m.in, part: 1, ofParts: 2, omitted: m.in.Omitted}, probe)
	fixed := llm.EstimateRequestTokens(llm.Request{System: m.system, Schema: m.schema, Tools: m.tools,
		Messages: []llm.Message{{Role: llm.RoleUser, Text: probe.String()}}})
	reserve := int64(400) // part headers, the list of files not shown
	if len(m.tools) > 0 {
		// Tool turns resend the conversation with each result appended.
		reserve += int64(m.toolLeft) * (llm.EstimateTokensBytes(int64(o.MaxResultBytes)) + 200)
	}
	chunkTokens := o.MaxInputTokens - fixed - reserve
	if chunkTokens < 500 {
		m.rep.Status = review.ModelSkipped
		m.problems = append(m.problems, fmt.Sprintf("the fixed part of the prompt (est. %d tokens) leaves no room for the diff in %d input tokens", fixed+reserve, o.MaxInputTokens))
		for _, f := range m.in.Diff {
			m.rep.OmittedFiles = append(m.rep.OmittedFiles, review.OmittedFile{Path: f.Path(), Reason: "left out: no token budget left for the diff"})
		}
		return nil
	}
	plan := planBudget(m.in.Diff, m.in.Findings, BudgetOptions{ChunkTokens: chunkTokens, MaxChunks: o.MaxChunks})
	m.rep.OmittedFiles = append(m.rep.OmittedFiles, plan.omitted...)
	notShown := slices.Clone(m.in.Omitted)
	for _, om := range plan.omitted {
		if !strings.HasPrefix(om.Reason, "partly reviewed") {
			notShown = append(notShown, om)
		}
	}
	total := 0
	for _, c := range plan.chunks {
		total += len(c)
	}
	var shown []*diff.File
	for i, parts := range plan.chunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		parts = m.fit(parts, i+1, len(plan.chunks), total, notShown)
		if len(parts) == 0 {
			continue
		}
		sent, stop, err := m.call(ctx, parts, i+1, len(plan.chunks), total-len(parts), notShown)
		if err != nil {
			return err
		}
		if sent {
			shown = append(shown, visibleFiles(parts)...)
		} else {
			why := stop
			if why == "" {
				why = "the model call failed"
			}
			for _, fp := range parts {
				m.rep.OmittedFiles = append(m.rep.OmittedFiles, review.OmittedFile{Path: fp.file.Path(), Reason: "not sent: " + why})
			}
		}
		if stop != "" {
			for _, rest := range plan.chunks[i+1:] {
				for _, fp := range rest {
					m.rep.OmittedFiles = append(m.rep.OmittedFiles, review.OmittedFile{Path: fp.file.Path(), Reason: "not sent: " + stop})
				}
			}
			break
		}
	}
	m.anchorAll(diff.NewIndex(shown))
	return nil
}

// fit checks a part's rendered prompt against the input budget (the plan
// works on estimates per file) and leaves out its lowest-priority files
// until it fits.
func (m *modelRun) fit(parts []filePart, part, of, total int, notShown []review.OmittedFile) []filePart {
	for len(parts) > 0 {
		w := newPromptWriter(m.r.o.Nonce(), m.rd)
		buildPrompt(promptInput{in: m.in, parts: parts, part: part, ofParts: of, findings: findingsFor(m.in.Findings, parts),
			omitted: notShown, notShown: total - len(parts)}, w)
		est := llm.EstimateRequestTokens(llm.Request{System: m.system, Schema: m.schema, Tools: m.tools,
			Messages: []llm.Message{{Role: llm.RoleUser, Text: w.String()}}})
		if len(m.tools) > 0 {
			est += int64(m.toolLeft) * (llm.EstimateTokensBytes(int64(m.r.o.MaxResultBytes)) + 200)
		}
		if est <= m.r.o.MaxInputTokens {
			return parts
		}
		last := parts[len(parts)-1]
		parts = parts[:len(parts)-1]
		m.rep.OmittedFiles = append(m.rep.OmittedFiles, review.OmittedFile{Path: last.file.Path(),
			Reason: fmt.Sprintf("left out by the token budget: the rendered prompt of part %d was est. %d tokens, over %d", part, est, m.r.o.MaxInputTokens)})
	}
	return parts
}

// visibleFiles returns the files as the model saw them: a partly shown
// file keeps only its shown hunks, so no comment lands on a hidden one.
func visibleFiles(parts []filePart) []*diff.File {
	out := make([]*diff.File, 0, len(parts))
	for _, fp := range parts {
		if !fp.partial() {
			out = append(out, fp.file)
			continue
		}
		cp := *fp.file
		cp.Hunks = nil
		for i, h := range fp.file.Hunks {
			if fp.includes(i) {
				cp.Hunks = append(cp.Hunks, h)
			}
		}
		out = append(out, &cp)
	}
	return out
}

// call sends one part. sent reports that the model answered; stop, when
// set, says why no further part may be sent.
func (m *modelRun) call(ctx context.Context, parts []filePart, part, of, notShownCount int, notShown []review.OmittedFile) (sent bool, stop string, err error) {
	o := m.r.o
	nonce := o.Nonce()
	w := newPromptWriter(nonce, m.rd)
	buildPrompt(promptInput{in: m.in, parts: parts, part: part, ofParts: of, findings: findingsFor(m.in.Findings, parts),
		omitted: notShown, notShown: notShownCount}, w)
	m.redacted.Add(w.red)
	req := llm.Request{System: m.system, Messages: []llm.Message{{Role: llm.RoleUser, Text: w.String()}},
		Schema: m.schema, MaxOutputTokens: o.MaxOutputTokens}
	var resp llm.Response
	history := req.Messages
	if len(m.tools) > 0 {
		req.Tools = m.tools
		runner := &guardedRunner{agent: o.Agent, rd: m.rd, nonce: nonce, red: m.redacted}
		res, cerr := o.Client.Converse(ctx, req, runner, llm.ConverseOptions{MaxToolCalls: m.toolLeft, MaxResultBytes: o.MaxResultBytes})
		m.toolLeft -= res.ToolCalls
		m.toolLog = append(m.toolLog, res.Log...)
		if res.CapHit {
			m.problems = append(m.problems, fmt.Sprintf("the model asked for more than %d tool calls", o.MaxToolCalls))
		}
		resp, err = res.Response, cerr
		if len(res.Messages) > 0 {
			history = res.Messages
		}
	} else {
		resp, err = o.Client.Complete(ctx, req)
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		return false, m.callFailed(ctx, part, of, err), nil
	}
	out, perr := parseModelOutput(resp.Text)
	if perr != nil && resp.Stop != llm.StopLength && o.Client.CallsLeft() != 0 {
		// One repair attempt: show the model its answer and the error.
		// The tool definitions stay (a history with tool calls needs them)
		// but no tool may be called.
		fix := req
		if len(fix.Tools) > 0 {
			fix.ToolChoice = llm.ToolChoiceNone
		}
		fix.Messages = slices.Clone(history)
		if resp.Text != "" {
			fix.Messages = append(fix.Messages, llm.Message{Role: llm.RoleAssistant, Text: safetext.Cut(resp.Text, 4<<10)})
		}
		fix.Messages = append(fix.Messages, llm.Message{Role: llm.RoleUser,
			Text: "That answer is not valid JSON for the schema (" + perr.Error() + "). Answer again with only the JSON object, without calling tools."})
		if resp2, err2 := o.Client.Complete(ctx, fix); err2 == nil {
			resp = resp2
			out, perr = parseModelOutput(resp.Text)
		} else if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
	}
	if resp.Stop == llm.StopLength {
		m.truncated = true
	}
	if resp.Stop == llm.StopRefusal {
		m.problems = append(m.problems, partLabel(part, of)+"the model declined to answer")
	}
	if perr != nil {
		m.failed++
		reason := "its answer was not valid JSON"
		if resp.Stop == llm.StopLength {
			reason = "its answer was cut at the output token cap before any comment was complete"
		}
		m.problems = append(m.problems, partLabel(part, of)+reason)
		return true, "", nil
	}
	if out.Incomplete {
		m.truncated = true
		m.problems = append(m.problems, partLabel(part, of)+"the answer was cut short; the comments before the cut were kept")
	}
	m.okChunks++
	if s := strings.TrimSpace(out.Summary); s != "" {
		if of > 1 {
			s = fmt.Sprintf("Part %d of %d: %s", part, of, s)
		}
		m.summaries = append(m.summaries, s)
	}
	m.comments = append(m.comments, out.Comments...)
	m.rep.DroppedComments = append(m.rep.DroppedComments, out.Invalid...)
	for _, name := range out.Ignored {
		if !slices.Contains(m.ignored, name) {
			m.ignored = append(m.ignored, name)
		}
	}
	return true, "", nil
}

func partLabel(part, of int) string {
	if of <= 1 {
		return ""
	}
	return fmt.Sprintf("part %d of %d: ", part, of)
}

// callFailed records a failed call and decides whether to go on.
func (m *modelRun) callFailed(ctx context.Context, part, of int, err error) string {
	if ctx.Err() != nil {
		return ""
	}
	m.failed++
	msg := textclip.OneLine(err.Error(), 300)
	switch llm.KindOf(err) {
	case llm.KindBudget, llm.KindCallCap:
		m.problems = append(m.problems, partLabel(part, of)+"budget exceeded: "+msg)
		return "the review's model budget is used up"
	case llm.KindRateLimited, llm.KindUnavailable, llm.KindTimeout:
		m.problems = append(m.problems, partLabel(part, of)+"provider down after retries: "+msg)
		return "the provider is down"
	case llm.KindAuth, llm.KindConfig:
		m.problems = append(m.problems, partLabel(part, of)+"provider refused the credentials: "+msg)
		return "the provider refused the credentials"
	}
	m.problems = append(m.problems, partLabel(part, of)+"model call failed: "+msg)
	return ""
}

// findingsFor returns the reported findings on the parts' files.
func findingsFor(fs []gate.Marked, parts []filePart) []gate.Marked {
	paths := map[string]bool{}
	for _, p := range parts {
		paths[p.file.Path()] = true
	}
	var out []gate.Marked
	for _, f := range fs {
		if f.Reported && paths[f.Path] {
			out = append(out, f)
		}
	}
	return out
}

// anchorAll turns the model's comments into review comments: anchored to a
// shown diff line, redacted, sanitised, checked for leaks, deduplicated and
// capped (most severe first).
func (m *modelRun) anchorAll(ix *diff.Index) {
	o := m.r.o
	echo := newEchoDetector(m.system)
	type kept struct {
		c     review.Comment
		moved bool
	}
	var keep []kept
	seen := map[string]bool{}
	drop := func(path string, line int, reason string) {
		m.rep.DroppedComments = append(m.rep.DroppedComments, review.DroppedComment{Path: safetext.Cut(cleanData(path), 300), Line: line, Reason: reason})
	}
	for _, c := range m.comments {
		a := anchorComment(ix, c)
		if a.reason != "" {
			drop(c.Path, c.Line, a.reason)
			continue
		}
		raw, found := m.rd.Redact(c.Body)
		m.redacted.Add(found)
		if echo.echoes(raw) {
			drop(a.path, a.line, "it repeats Aster's instructions")
			continue
		}
		body, _ := safetext.Sanitize(raw, o.Sanitize)
		if strings.TrimSpace(body) == "" {
			drop(a.path, a.line, "empty after sanitising")
			continue
		}
		out := review.Comment{Path: a.path, Line: a.line, EndLine: a.endLine, Severity: c.Severity, Body: body,
			Fingerprint: finding.CommentFingerprint(a.path, a.code, c.Severity)}
		if !a.endDropped {
			out.Suggestion = m.cleanSuggestion(c.Suggestion)
		}
		out.Evidence, out.Verification = c.Evidence, rejectedEvidence(c.EvidenceErr)
		if seen[out.Fingerprint] {
			drop(a.path, a.line, "duplicate of another comment on the same line")
			continue
		}
		seen[out.Fingerprint] = true
		keep = append(keep, kept{c: out, moved: a.moved})
	}
	sort.SliceStable(keep, func(i, j int) bool { return keep[i].c.Severity.Rank() > keep[j].c.Severity.Rank() })
	moved := 0
	for i, k := range keep {
		if i >= o.MaxComments {
			drop(k.c.Path, k.c.Line, fmt.Sprintf("over the cap of %d comments", o.MaxComments))
			continue
		}
		if k.moved {
			moved++
		}
		m.rep.Comments = append(m.rep.Comments, k.c)
	}
	sort.SliceStable(m.rep.Comments, func(i, j int) bool {
		a, b := m.rep.Comments[i], m.rep.Comments[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Line < b.Line
	})
	if moved > 0 {
		m.problems = append(m.problems, fmt.Sprintf("%d comment(s) moved to the line their quoted code is on", moved))
	}
}

// cleanSuggestion keeps replacement code that can be posted in a suggestion
// block: redacted, no fence lines, at most 8 KiB.
func (m *modelRun) cleanSuggestion(s string) string {
	if s == "" || len(s) > 8<<10 {
		return ""
	}
	s, found := m.rd.Redact(s)
	m.redacted.Add(found)
	s = strings.ToValidUTF8(s, "\uFFFD")
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			return ""
		}
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && safetext.Hidden(r) }) {
		return ""
	}
	return s
}

// finish fills usage, summary, status and the one-line note.
func (m *modelRun) finish() {
	o := m.r.o
	st := o.Client.Stats()
	m.rep.Usage = review.Usage{Calls: st.Calls, InputTokens: st.Usage.InputTokens, OutputTokens: st.Usage.OutputTokens, CostUSD: st.CostUSD}
	if len(m.summaries) > 0 {
		sum, found := m.rd.Redact(strings.Join(m.summaries, "\n\n"))
		m.redacted.Add(found)
		if newEchoDetector(m.system).echoes(sum) {
			sum = "(The model's summary was withheld: it repeated Aster's instructions.)"
		}
		m.rep.Summary, _ = safetext.Sanitize(sum, safetext.SanitizeOptions{AllowedHosts: o.Sanitize.AllowedHosts, MaxBytes: o.MaxSummaryBytes})
	}
	if m.rep.Status == review.ModelOK {
		budgetLeftOut := false
		for _, f := range m.rep.OmittedFiles {
			if !strings.HasPrefix(f.Reason, "no text hunks") {
				budgetLeftOut = true
			}
		}
		switch {
		case m.okChunks == 0:
			m.rep.Status = review.ModelFailed
		case m.failed > 0 || budgetLeftOut || m.truncated:
			m.rep.Status = review.ModelPartial
		}
	}
	var parts []string
	switch m.rep.Status {
	case review.ModelFailed:
		parts = append(parts, "model review failed")
	case review.ModelSkipped:
		parts = append(parts, "model review skipped")
	default:
		parts = append(parts, fmt.Sprintf("model review by %s %s: %d comment(s)", m.rep.Provider, m.rep.Model, len(m.rep.Comments)))
		if n := len(m.rep.DroppedComments); n > 0 {
			parts = append(parts, fmt.Sprintf("%d dropped", n))
		}
	}
	if m.rep.Status != review.ModelSkipped {
		cost := fmt.Sprintf("$%.4f", st.CostUSD)
		if !st.CostKnown {
			cost = "cost unknown (no price for this model)"
		}
		parts = append(parts, fmt.Sprintf("%d call(s), %d input + %d output tokens, %s", st.Calls, st.Usage.InputTokens, st.Usage.OutputTokens, cost))
	}
	if n := countOmitted(m.rep.OmittedFiles); n > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) left out or cut by the token budget", n))
	}
	if n := m.redacted.Total(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d secret(s) redacted", n))
	}
	if len(m.toolLog) > 0 {
		parts = append(parts, fmt.Sprintf("%d sandboxed tool call(s)", len(m.toolLog)))
	}
	if len(m.ignored) > 0 {
		parts = append(parts, "ignored answer fields: "+strings.Join(m.ignored, ", "))
	}
	parts = append(parts, m.problems...)
	m.rep.Note = textclip.OneLine(strings.Join(parts, "; "), maxNoteBytes)
}

func countOmitted(fs []review.OmittedFile) int {
	n := 0
	for _, f := range fs {
		if !strings.HasPrefix(f.Reason, "no text hunks") {
			n++
		}
	}
	return n
}

// maxNoteBytes caps the one-line texts this package makes of errors and reasons.
const maxNoteBytes = 1000

// guardedRunner wraps the agent: results are redacted, cleaned and framed
// as untrusted data before the model reads them.
type guardedRunner struct {
	agent *Agent
	rd    *safetext.Redactor
	nonce string
	red   safetext.Redaction
}

func (g *guardedRunner) RunTool(ctx context.Context, call llm.ToolCall) (string, error) {
	out, err := g.agent.RunTool(ctx, call)
	if err != nil {
		msg, found := g.rd.Redact(err.Error())
		g.red.Add(found)
		return "", errors.New(cleanData(msg))
	}
	text, found := g.rd.Redact(out)
	g.red.Add(found)
	w := newPromptWriter(g.nonce, g.rd)
	w.rawData("tool_output", cleanData(text))
	return w.String(), nil
}

// echoDetector finds model text that repeats the system prompt: any run of
// eight words of it, case and punctuation aside.
type echoDetector map[string]bool

const echoWords = 8

func newEchoDetector(system string) echoDetector {
	words := normWords(system)
	d := echoDetector{}
	for i := 0; i+echoWords <= len(words); i++ {
		d[strings.Join(words[i:i+echoWords], " ")] = true
	}
	return d
}

func (d echoDetector) echoes(s string) bool {
	words := normWords(s)
	for i := 0; i+echoWords <= len(words); i++ {
		if d[strings.Join(words[i:i+echoWords], " ")] {
			return true
		}
	}
	return false
}

func normWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}
