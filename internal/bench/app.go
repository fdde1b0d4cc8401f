package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
)

// AppConfig is one run of the App benchmark: `aster app serve` as a child
// process against githubtest's fake GitHub (as strict as in the tests: every
// request checked against GitHub's OpenAPI description), with N pull requests
// delivered at once, per N and per store.
type AppConfig struct {
	// Binary is the aster binary run as `aster app serve` (required).
	Binary string
	// ServeArgs are more arguments for `aster app serve` (--runtime,
	// --init-path, ...), after the ones the benchmark sets.
	ServeArgs []string
	// Workers is app serve's --workers (0: its default).
	Workers int
	// PRs are the pull request counts, one cell per count and store.
	PRs []int
	// FilesPerPR is how many files each pull request changes (default 20).
	FilesPerPR int
	// Bundles are the git bundles the changes come from (required).
	Bundles []string
	// Stores are the databases, each cell on a fresh server.
	Stores []AppStore
	// Timeout bounds one cell, from the first delivery to the last review
	// (default 20 minutes).
	Timeout time.Duration
	// TempDir holds the scratch repositories and databases ("": the system's).
	TempDir string
	// Progress receives a line every few seconds; nil is silent.
	Progress io.Writer
	// Checkpoint, when set, gets the report so far after each cell (to
	// save it: a long run stopped halfway keeps what it measured).
	Checkpoint func(*AppReport)
	// LogDir, when set, keeps each cell's server log there
	// (server-STORE-N.log) and the check runs that did not end success,
	// title, summary and text as the fake received them
	// (checkruns-STORE-N.txt): what a reader needs to see why.
	LogDir string
}

// AppStore is a database for app serve: "sqlite" (a fresh file per cell) or
// "postgres" at URL (shared; each cell's repository is new to it).
type AppStore struct {
	Name string
	URL  string
}

// AppReport is the App benchmark's result, as printed and as JSON.
type AppReport struct {
	Started    time.Time   `json:"started"`
	Finished   time.Time   `json:"finished"`
	Cores      int         `json:"cores"`
	LoadBefore []float64   `json:"loadavg_before"`
	LoadAfter  []float64   `json:"loadavg_after"`
	Workers    int         `json:"workers,omitempty"`
	ServeArgs  []string    `json:"serve_args,omitempty"`
	Sources    []AppSource `json:"sources"`
	Cells      []AppCell   `json:"cells"`
}

// AppCell is one store and one pull request count.
type AppCell struct {
	Store string `json:"store"`
	PRs   int    `json:"prs"`
	// FilesPerPR is what each pull request changes (FilesPerPR, or the
	// pool's size when smaller).
	FilesPerPR int `json:"files_per_pr"`
	// Reviewed counts the pull requests whose check run completed (the
	// App's last step of a review); WithReview those that also got a
	// review (the App posts one when it has inline findings); Conclusions
	// the check runs' conclusions.
	Reviewed   int `json:"reviewed"`
	WithReview int `json:"with_review"`
	// Unfinished holds the titles of check runs that did not end
	// success (distinct, at most five): what the App said could not finish.
	Unfinished []string `json:"unfinished,omitempty"`
	// Twice counts the pull requests with more than one review or more
	// than one check run: work done again (0 unless something is wrong).
	Twice       int            `json:"twice"`
	Conclusions map[string]int `json:"conclusions"`
	// DeliverMS is the time until every delivery was answered (202).
	DeliverMS float64 `json:"deliver_ms"`
	// Latency is from a pull request's delivery to its completed check run,
	// seen by polling the fake every AppPollInterval.
	Latency PhaseStats `json:"latency"`
	MaxMS   float64    `json:"max_ms"`
	// Wait is from the delivery to the check run's creation (a worker took
	// the job: the queue), Review from there to its completion (the review
	// itself), each seen at the same polls.
	Wait   PhaseStats `json:"wait"`
	Review PhaseStats `json:"review"`
	// WallMS is from the first delivery to the last completed check run;
	// ReviewsPerMin is Reviewed over it.
	WallMS        float64 `json:"wall_ms"`
	ReviewsPerMin float64 `json:"reviews_per_min"`
	// IdleRSSBytes and PeakRSSBytes are the server's VmRSS once it answered
	// /healthz and its VmHWM at the end: the app serve process alone, not
	// the sandboxes (containers and their runtime processes are apart).
	IdleRSSBytes int64 `json:"idle_rss_bytes"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PeakSandboxes is the most runs holding a sandbox slot at once
	// (aster_sandbox_running in the server's /metrics, sampled every
	// AppPollInterval); SandboxSlots the slots (--workers x --parallel).
	PeakSandboxes int `json:"peak_sandboxes"`
	SandboxSlots  int `json:"sandbox_slots"`
	// MeanSandboxes is the mean of the same samples, from the first
	// delivery to the last review: how full the slots were kept.
	MeanSandboxes float64 `json:"mean_sandboxes"`
	// Error says why the cell is incomplete.
	Error string `json:"error,omitempty"`
}

// AppPollInterval is how often the benchmark looks at the fake's check runs
// and the server's /metrics: the resolution of the latencies.
const AppPollInterval = 100 * time.Millisecond

// appWebhookSecret signs the deliveries; it is the bench's own, in files of
// its temporary directory.
const appWebhookSecret = "aster-bench-app-webhook-secret-0123456789"

// RunApp runs every cell. A cell that fails is reported with its error and
// the run goes on; the error returned is for what stops the whole run.
func RunApp(ctx context.Context, cfg AppConfig) (*AppReport, error) {
	if cfg.Binary == "" || len(cfg.Bundles) == 0 || len(cfg.PRs) == 0 || len(cfg.Stores) == 0 {
		return nil, errors.New("bench app: binary, bundles, pull request counts and stores are required")
	}
	if cfg.FilesPerPR <= 0 {
		cfg.FilesPerPR = 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 20 * time.Minute
	}
	if _, err := githubtest.DataDir(); err != nil {
		return nil, fmt.Errorf("the fake GitHub needs GitHub's OpenAPI description: %w", err)
	}
	tmp, err := os.MkdirTemp(cfg.TempDir, "aster-bench-app-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rep := &AppReport{Started: time.Now(), Cores: numCPU(), LoadBefore: loadavg(), Workers: cfg.Workers, ServeArgs: cfg.ServeArgs}
	pool, err := loadChangePool(ctx, cfg.Bundles, tmp)
	if err != nil {
		return nil, err
	}
	rep.Sources = pool.sources
	var id [4]byte
	_, _ = rand.Read(id[:])
	runID := hex.EncodeToString(id[:])
	// Each count on every store before the next count: the stores side by
	// side, at nearly the same time on a shared machine.
	for _, n := range cfg.PRs {
		for _, st := range cfg.Stores {
			if err := ctx.Err(); err != nil {
				rep.Finished, rep.LoadAfter = time.Now(), loadavg()
				return rep, err
			}
			progress(cfg.Progress, "bench app: %s, %d pull requests of %d files: starting (load %v)\n", st.Name, n, min(cfg.FilesPerPR, len(pool.changed)), loadavg())
			c := runAppCell(ctx, cfg, pool, st, n, runID, tmp)
			if c.Error != "" {
				progress(cfg.Progress, "bench app: %s, %d pull requests: %s\n", st.Name, n, c.Error)
			} else {
				progress(cfg.Progress, "bench app: %s, %d pull requests: %d reviewed, p50 %.1f s, p95 %.1f s, p99 %.1f s, max %.1f s, wall %.1f s, %.2f reviews/min, "+
					"queue wait p50 %.1f s, review p50 %.1f s p95 %.1f s, RSS idle %d MiB peak %d MiB, %d of %d sandbox slots at most (load %v)\n",
					st.Name, n, c.Reviewed, c.Latency.P50MS/1000, c.Latency.P95MS/1000, c.Latency.P99MS/1000, c.MaxMS/1000, c.WallMS/1000, c.ReviewsPerMin,
					c.Wait.P50MS/1000, c.Review.P50MS/1000, c.Review.P95MS/1000, c.IdleRSSBytes>>20, c.PeakRSSBytes>>20, c.PeakSandboxes, c.SandboxSlots, loadavg())
			}
			rep.Cells = append(rep.Cells, c)
			if cfg.Checkpoint != nil {
				rep.Finished, rep.LoadAfter = time.Now(), loadavg()
				cfg.Checkpoint(rep)
			}
		}
	}
	rep.Finished, rep.LoadAfter = time.Now(), loadavg()
	return rep, nil
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// appCell is one cell's fake GitHub, repository and pull requests.
type appCell struct {
	tb           *fakeTB
	fake         *githubtest.Server
	owner, repo  string
	repoID       int64
	base         string
	heads        []string // by pull request number; [0] unused
	rejected     []string
	rejectedMu   sync.Mutex
	examplePR    map[string]any
	deliveryBase string
}

func runAppCell(ctx context.Context, cfg AppConfig, pool *changePool, st AppStore, n int, runID, tmp string) AppCell {
	out := AppCell{Store: st.Name, PRs: n, FilesPerPR: min(cfg.FilesPerPR, len(pool.changed)), Conclusions: map[string]int{}}
	dir, err := os.MkdirTemp(tmp, fmt.Sprintf("cell-%s-%d-", st.Name, n))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer os.RemoveAll(dir)
	cell := &appCell{tb: &fakeTB{dir: dir}, owner: "bench", repo: fmt.Sprintf("app-%s-%s-%d", runID, st.Name, n)}
	defer cell.tb.close()
	cell.deliveryBase = cell.repo
	if err := cell.setUp(pool, n, out.FilesPerPR); err != nil {
		out.Error = "set up the fake GitHub: " + err.Error()
		return out
	}
	srv, err := startAppServer(ctx, cfg, st, cell, dir, runID)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer srv.stop()
	out.IdleRSSBytes = procStatusBytes(srv.cmd.Process.Pid, "VmRSS")
	cell.measure(ctx, cfg, srv, &out)
	if cfg.LogDir != "" {
		if err := cell.keep(cfg.LogDir, srv, &out); err != nil && out.Error == "" {
			out.Error = "keep the logs: " + err.Error()
		}
	}
	if out.PeakRSSBytes = procStatusBytes(srv.cmd.Process.Pid, "VmHWM"); out.PeakRSSBytes == 0 && out.Error == "" {
		out.Error = "could not read the server's VmHWM"
	}
	if out.Twice > 0 && out.Error == "" {
		out.Error = fmt.Sprintf("%d pull requests got two reviews or two check runs", out.Twice)
	}
	if rej := cell.rejections(); len(rej) > 0 && out.Error == "" {
		out.Error = "the fake GitHub refused requests GitHub would refuse: " + strings.Join(rej, "; ")
	}
	if out.Error != "" {
		out.Error += srv.logTail()
	}
	return out
}

// keep copies the server's log so far and the unfinished check runs into dir.
func (c *appCell) keep(dir string, srv *appServer, out *AppCell) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := fmt.Sprintf("%s-%d", out.Store, out.PRs)
	// The worker logs "review finished" once the store has the job's end,
	// just after the review the fake GitHub saw was posted: give the last
	// of them a moment to be written.
	var log []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if log, err = os.ReadFile(srv.log.Name()); err != nil {
			return err
		}
		if bytes.Count(log, []byte("review finished")) >= out.Reviewed || time.Now().After(deadline) {
			break
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "server-"+name+".log"), log, 0o644); err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range c.fake.CheckRuns(c.owner, c.repo) {
		if r.Status == "completed" && r.Conclusion == "success" {
			continue
		}
		fmt.Fprintf(&b, "check run %d on %.12s: %s %s\ntitle: %s\nsummary:\n%s\ntext:\n%s\n\n", r.ID, r.HeadSHA, r.Status, r.Conclusion, r.Title, r.Summary, r.Text)
	}
	return os.WriteFile(filepath.Join(dir, "checkruns-"+name+".txt"), []byte(b.String()), 0o644)
}

// setUp starts the fake and fills its repository: the pool's base tree, and
// pull request i+1 changing pool.change(i).
func (c *appCell) setUp(pool *changePool, n, files int) error {
	return guard(func() {
		c.fake = githubtest.New(c.tb, githubtest.Options{OnReject: func(format string, args ...any) {
			c.rejectedMu.Lock()
			defer c.rejectedMu.Unlock()
			if len(c.rejected) < 5 {
				c.rejected = append(c.rejected, fmt.Sprintf(format, args...))
			}
		}})
		git := githubtest.NewGitRepo(c.tb)
		c.fake.AddRepo(githubtest.Repository{Owner: c.owner, Name: c.repo, Git: git})
		c.repoID = 700000 + int64(len(c.repo))*1000 + int64(n)
		c.base = git.Commit("", "base "+c.repo, pool.base)
		c.heads = make([]string, n+1)
		for i := 1; i <= n; i++ {
			c.heads[i] = git.Commit(c.base, fmt.Sprintf("%s change %d", c.repo, i), pool.change(i-1, files))
			c.fake.AddPullRequest(c.owner, c.repo, githubtest.PullRequest{Number: i, Title: fmt.Sprintf("Change %d", i),
				BaseRef: "main", BaseSHA: c.base, HeadRef: fmt.Sprintf("change-%d", i), HeadSHA: c.heads[i]})
		}
		for _, ex := range githubtest.WebhookExamples(c.tb, "pull_request") {
			if ex.Action == "opened" {
				if err := json.Unmarshal(ex.Body, &c.examplePR); err != nil {
					c.tb.Fatalf("pull_request example: %v", err)
				}
				break
			}
		}
		if c.examplePR == nil {
			c.tb.Fatalf("no pull_request opened example")
		}
	})
}

func (c *appCell) rejections() []string {
	c.rejectedMu.Lock()
	defer c.rejectedMu.Unlock()
	return append(c.rejected, c.tb.errors()...)
}

// payload is GitHub's example pull_request "opened" delivery, pointed at the
// cell's repository and pull request number.
func (c *appCell) payload(number int) ([]byte, error) {
	raw, err := json.Marshal(c.examplePR)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	repoJSON := func(v any) error {
		r, ok := v.(map[string]any)
		if !ok {
			return errors.New("pull_request example: no repository object")
		}
		owner, ok := r["owner"].(map[string]any)
		if !ok {
			return errors.New("pull_request example: no repository owner")
		}
		r["name"], r["full_name"], r["id"], owner["login"] = c.repo, c.owner+"/"+c.repo, float64(c.repoID), c.owner
		return nil
	}
	pr, ok := m["pull_request"].(map[string]any)
	if !ok {
		return nil, errors.New("pull_request example: no pull_request object")
	}
	m["number"], pr["number"], pr["draft"], pr["state"] = float64(number), float64(number), false, "open"
	hd, _ := pr["head"].(map[string]any)
	bs, _ := pr["base"].(map[string]any)
	if hd == nil || bs == nil {
		return nil, errors.New("pull_request example: no head or base")
	}
	hd["sha"], bs["sha"], hd["ref"], bs["ref"] = c.heads[number], c.base, fmt.Sprintf("change-%d", number), "main"
	for _, r := range []any{m["repository"], hd["repo"], bs["repo"]} {
		if err := repoJSON(r); err != nil {
			return nil, err
		}
	}
	m["installation"] = map[string]any{"id": float64(c.fake.InstallationID())}
	return json.Marshal(m)
}

// measure delivers every pull request at once and waits for their check runs.
func (c *appCell) measure(ctx context.Context, cfg AppConfig, srv *appServer, out *AppCell) {
	n := out.PRs
	bodies := make([][]byte, n+1)
	for i := 1; i <= n; i++ {
		b, err := c.payload(i)
		if err != nil {
			out.Error = err.Error()
			return
		}
		bodies[i] = b
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	// The sampler runs from before the first delivery to the last review.
	var peak, slots, sum, samples atomic.Int64
	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		t := time.NewTicker(AppPollInterval)
		defer t.Stop()
		for {
			if running, n, ok := srv.sandboxGauges(ctx); ok {
				slots.Store(int64(n))
				sum.Add(int64(running))
				samples.Add(1)
				if int64(running) > peak.Load() { // this goroutine alone writes
					peak.Store(int64(running))
				}
			}
			select {
			case <-stopSampler:
				return
			case <-t.C:
			}
		}
	}()
	sent := make([]time.Time, n+1)
	statuses := make([]int, n+1)
	errs := make([]error, n+1)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.url+"/webhook", bytes.NewReader(bodies[i]))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("User-Agent", "GitHub-Hookshot/aster-bench")
			req.Header.Set(github.EventHeader, "pull_request")
			req.Header.Set(github.DeliveryHeader, fmt.Sprintf("%s-%d", c.deliveryBase, i))
			req.Header.Set(github.SignatureHeader, github.Sign([]byte(appWebhookSecret), bodies[i]))
			sent[i] = time.Now()
			resp, err := srv.client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	out.DeliverMS = ms(time.Since(start))
	for i := 1; i <= n; i++ {
		if errs[i] != nil || statuses[i] != http.StatusAccepted {
			close(stopSampler)
			<-samplerDone
			out.Error = fmt.Sprintf("delivery %d: status %d, %v", i, statuses[i], errs[i])
			return
		}
	}
	done, begun := make([]time.Time, n+1), make([]time.Time, n+1)
	conclusion := make([]string, n+1)
	byHead := make(map[string]int, n)
	for i := 1; i <= n; i++ {
		byHead[c.heads[i]] = i
	}
	last := time.Now()
	t := time.NewTicker(AppPollInterval)
	defer t.Stop()
	for out.Reviewed < n {
		select {
		case <-ctx.Done():
			why := fmt.Sprintf("after --timeout %s", cfg.Timeout)
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = "when the run was stopped"
			}
			out.Error = fmt.Sprintf("%d of %d pull requests reviewed %s", out.Reviewed, n, why)
		case now := <-t.C:
			for _, r := range c.fake.CheckRuns(c.owner, c.repo) {
				i := byHead[r.HeadSHA]
				if i > 0 && begun[i].IsZero() {
					begun[i] = now
				}
				if i > 0 && r.Status == "completed" && done[i].IsZero() {
					done[i], conclusion[i] = now, r.Conclusion
					out.Reviewed++
				}
			}
			if cfg.Progress != nil && now.Sub(last) >= 5*time.Second {
				last = now
				progress(cfg.Progress, "bench app: %s, %d pull requests: %d reviewed, at most %d of %d sandbox slots held so far, %s\n",
					out.Store, n, out.Reviewed, peak.Load(), slots.Load(), now.Sub(start).Round(time.Second))
			}
			continue
		}
		break
	}
	close(stopSampler)
	<-samplerDone
	out.PeakSandboxes, out.SandboxSlots = int(peak.Load()), int(slots.Load())
	if k := samples.Load(); k > 0 {
		out.MeanSandboxes = round2(float64(sum.Load()) / float64(k))
	}
	runs := map[string]int{}
	for _, r := range c.fake.CheckRuns(c.owner, c.repo) {
		runs[r.HeadSHA]++
		if r.Status == "completed" && r.Conclusion != "success" && len(out.Unfinished) < 5 && !slices.Contains(out.Unfinished, r.Title) {
			out.Unfinished = append(out.Unfinished, r.Title)
		}
	}
	var lat, wait, work []time.Duration
	var end time.Time
	for i := 1; i <= n; i++ {
		if done[i].IsZero() {
			continue
		}
		lat = append(lat, done[i].Sub(sent[i]))
		wait, work = append(wait, begun[i].Sub(sent[i])), append(work, done[i].Sub(begun[i]))
		if done[i].After(end) {
			end = done[i]
		}
		out.Conclusions[conclusion[i]]++
		reviews := len(c.fake.Reviews(c.owner, c.repo, i))
		if reviews > 0 {
			out.WithReview++
		}
		if reviews > 1 || runs[c.heads[i]] > 1 {
			out.Twice++
		}
	}
	if len(lat) > 0 {
		out.Latency = PhaseStats{N: len(lat), P50MS: ms(percentile(lat, 50)), P95MS: ms(percentile(lat, 95)), P99MS: ms(percentile(lat, 99))}
		out.MaxMS = ms(percentile(lat, 100))
		out.Wait = PhaseStats{N: len(wait), P50MS: ms(percentile(wait, 50)), P95MS: ms(percentile(wait, 95)), P99MS: ms(percentile(wait, 99))}
		out.Review = PhaseStats{N: len(work), P50MS: ms(percentile(work, 50)), P95MS: ms(percentile(work, 95)), P99MS: ms(percentile(work, 99))}
		wall := end.Sub(start)
		out.WallMS = ms(wall)
		out.ReviewsPerMin = round2(float64(len(lat)) / wall.Minutes())
	}
}

// appServer is one `aster app serve` child.
type appServer struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client
	log    *os.File
	done   chan struct{}
}

func startAppServer(ctx context.Context, cfg AppConfig, st AppStore, cell *appCell, dir, runID string) (*appServer, error) {
	keyFile, secretFile := filepath.Join(dir, "app.pem"), filepath.Join(dir, "webhook-secret")
	if err := os.WriteFile(keyFile, cell.fake.PrivateKeyPEM(), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(secretFile, []byte(appWebhookSecret+"\n"), 0o600); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"app", "serve", "--addr", addr, "--app-id", strconv.FormatInt(cell.fake.AppID(), 10), "--private-key", keyFile,
		"--webhook-secret-file", secretFile, "--github-api-url", cell.fake.URL(), "--replica-id", "bench-" + runID}
	if cfg.Workers > 0 {
		args = append(args, "--workers", strconv.Itoa(cfg.Workers))
	}
	env := make([]string, 0, len(os.Environ())+2)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ASTER_DATABASE_URL=") && !strings.HasPrefix(e, "ASTER_DB=") {
			env = append(env, e)
		}
	}
	switch st.Name {
	case "sqlite":
		args = append(args, "--db", filepath.Join(dir, "aster.db"))
	case "postgres":
		env = append(env, "ASTER_DATABASE_URL="+st.URL) // not in the arguments, which ps shows
	default:
		return nil, fmt.Errorf("store %q: want sqlite or postgres", st.Name)
	}
	args = append(args, cfg.ServeArgs...)
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Binary, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s app serve: %w", cfg.Binary, err)
	}
	s := &appServer{cmd: cmd, url: "http://" + addr, log: logf, done: make(chan struct{}),
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := s.client.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.done:
			err := fmt.Errorf("aster app serve exited before it answered /healthz%s", s.logTail())
			logf.Close()
			return nil, err
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("aster app serve did not answer /healthz within a minute%s", s.logTail())
			s.stop()
			return nil, err
		}
	}
}

// stop ends the server with SIGTERM (SIGKILL after 30 s).
func (s *appServer) stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	s.log.Close()
}

// logTail is the end of the server's log, for an error.
func (s *appServer) logTail() string {
	b, err := os.ReadFile(s.log.Name())
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nlast lines of aster app serve:\n" + string(b)
}

// sandboxGauges reads aster_sandbox_running and aster_sandbox_max_concurrent
// from the server's /metrics.
func (s *appServer) sandboxGauges(ctx context.Context) (running, slots int, ok bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/metrics", nil)
	if err != nil {
		return 0, 0, false
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, 0, false
	}
	defer resp.Body.Close()
	found := 0
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		name, v, _ := strings.Cut(sc.Text(), " ")
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			continue
		}
		switch name {
		case "aster_sandbox_running":
			running, found = int(f), found+1
		case "aster_sandbox_max_concurrent":
			slots, found = int(f), found+1
		}
	}
	return running, slots, found == 2
}

// procStatusBytes reads a kB field of /proc/PID/status (0 when it cannot).
func procStatusBytes(pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
