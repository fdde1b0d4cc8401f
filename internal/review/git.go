package review

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/depcache"
	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/repoconfig"
	"github.com/asterhq/aster/internal/textclip"
)

// GitOptions select a local change.
type GitOptions struct {
	// Dir is any directory inside the repository.
	Dir string
	// Base and Head are revisions; Head defaults to HEAD, Base to the first
	// of origin/HEAD, main and master that differs from Head, else Head~1.
	// The diff is base...head: what head changed since the merge base.
	Base string
	Head string
	// Diff caps the parsed diff.
	Diff diff.Options
}

// ErrGit marks a failure of the local repository (not a git repository, an
// unknown revision), with git's own message.
var ErrGit = errors.New("git")

// git runs git in dir with settings that keep a repository's own
// configuration from running programs or changing the output format.
func git(ctx context.Context, dir string, args ...string) *exec.Cmd {
	base := []string{"-C", dir, "-c", "core.quotePath=true", "-c", "core.fsmonitor=false",
		"-c", "diff.external=", "-c", "color.ui=never", "-c", "core.pager=cat"}
	cmd := exec.CommandContext(ctx, "git", append(base, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	return cmd
}

// gitOutput runs git and returns its trimmed stdout (capped at max bytes).
func gitOutput(ctx context.Context, dir string, max int64, args ...string) (string, error) {
	cmd := git(ctx, dir, args...)
	stderr := &textclip.HeadWriter{Max: 4096}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrGit, err)
	}
	b, rerr := io.ReadAll(io.LimitReader(out, max+1))
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if werr != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = werr.Error()
		}
		return "", fmt.Errorf("%w: git %s: %s", ErrGit, args[0], why)
	}
	if rerr != nil {
		return "", rerr
	}
	if int64(len(b)) > max {
		return "", fmt.Errorf("%w: git %s: output over %d bytes", ErrGit, args[0], max)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// resolve returns the commit id of rev.
func resolve(ctx context.Context, dir, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%w: revision %q starts with -", ErrGit, rev)
	}
	// Without --quiet, git says why it refused (on stderr, which the error carries).
	id, err := gitOutput(ctx, dir, 256, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%w (no commit of that name in this repository: check the name, or fetch it)", err)
	}
	return id, nil
}

// FromGit builds a Change from a local git repository. Nothing of the
// working tree is used: the diff, the snapshot and the configuration all come
// from commits.
func FromGit(ctx context.Context, opts GitOptions) (*Change, error) {
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	root, err := gitOutput(ctx, dir, 4096, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not inside a git repository: %w", dir, err)
	}
	headRef := opts.Head
	if headRef == "" {
		headRef = "HEAD"
	}
	head, err := resolve(ctx, root, headRef)
	if err != nil {
		return nil, fmt.Errorf("head %q: %w", headRef, err)
	}
	baseRef, base := opts.Base, ""
	if baseRef != "" {
		if base, err = resolve(ctx, root, baseRef); err != nil {
			return nil, fmt.Errorf("base %q: %w", baseRef, err)
		}
	} else {
		for _, cand := range []string{"origin/HEAD", "main", "master", headRef + "~1"} {
			if sha, err := resolve(ctx, root, cand); err == nil && sha != head {
				baseRef, base = cand, sha
				break
			}
		}
		if base == "" {
			return nil, fmt.Errorf("%w: no base revision found (tried origin/HEAD, main, master, %s~1); pass --base", ErrGit, headRef)
		}
	}
	mergeBase, err := gitOutput(ctx, root, 256, "merge-base", base, head)
	if err != nil {
		return nil, fmt.Errorf("%s and %s share no history: %w", baseRef, headRef, err)
	}
	ch := &Change{
		Repository: root,
		CacheID:    cacheID(ctx, root),
		CacheScope: cacheScope(ctx, root, headRef, head),
		Base:       Revision{Ref: baseRef, SHA: base},
		Head:       Revision{Ref: headRef, SHA: head},
		SourceRoot: root,
	}
	if err := loadConfig(ctx, root, ch); err != nil {
		return nil, err
	}
	files, truncated, err := gitDiff(ctx, root, mergeBase, head, opts.Diff)
	if err != nil {
		return nil, err
	}
	ch.Diff, ch.DiffTruncated = files, truncated
	if ch.HeadFiles, err = treeFiles(ctx, root, head); err != nil {
		return nil, err
	}
	ch.OpenSnapshot = func() (io.ReadCloser, error) { return archive(ctx, root, head) }
	ch.OpenBaseSnapshot = func() (io.ReadCloser, error) { return archive(ctx, root, mergeBase) }
	ch.MergeBase = mergeBase
	// The working tree matters only when the head is what is checked out.
	if checkedOut, err := resolve(ctx, root, "HEAD"); err == nil && checkedOut == head {
		ch.Uncommitted, ch.UncommittedMore = uncommitted(ctx, root)
	}
	return ch, nil
}

// uncommitted lists the paths `git status` shows (modified, staged, deleted,
// untracked; untracked directories as one entry), at most MaxUncommitted of
// them, and counts the rest. A status git cannot give is no reason to stop a
// review: it then names nothing.
func uncommitted(ctx context.Context, root string) ([]string, int) {
	out, err := gitOutput(ctx, root, 4<<20, "status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=normal")
	if err != nil {
		return nil, 0
	}
	var paths []string
	more := 0
	for _, rec := range strings.Split(out, "\x00") {
		if len(rec) < 4 || rec[2] != ' ' {
			continue
		}
		if len(paths) == MaxUncommitted {
			more++
			continue
		}
		paths = append(paths, rec[3:])
	}
	return paths, more
}

// loadConfig reads .aster.yml from the base revision and notes whether the
// head changes it.
func loadConfig(ctx context.Context, root string, ch *Change) error {
	blob := func(rev string) string {
		id, err := gitOutput(ctx, root, 256, "rev-parse", "--verify", "--quiet", rev+":"+repoconfig.FileName)
		if err != nil {
			return ""
		}
		return id
	}
	baseBlob, headBlob := blob(ch.Base.SHA), blob(ch.Head.SHA)
	ch.HeadConfigChanged = baseBlob != headBlob
	ch.Config, ch.ConfigSource = repoconfig.Default(), "defaults"
	if baseBlob == "" {
		return nil
	}
	size, err := gitOutput(ctx, root, 64, "cat-file", "-s", baseBlob)
	if err != nil {
		return err
	}
	if n, _ := strconv.ParseInt(size, 10, 64); n > repoconfig.MaxFileBytes {
		return fmt.Errorf("%s at base %s: %w: %d bytes, more than %d", repoconfig.FileName, ShortSHA(ch.Base.SHA), repoconfig.ErrInvalid, n, repoconfig.MaxFileBytes)
	}
	data, err := gitOutput(ctx, root, repoconfig.MaxFileBytes, "cat-file", "blob", baseBlob)
	if err != nil {
		return err
	}
	ch.Config, ch.ConfigSource, err = BaseConfig([]byte(data), ch.Base.SHA)
	return err
}

// gitDiff streams `git diff base head` into the parser.
func gitDiff(ctx context.Context, root, base, head string, opts diff.Options) ([]*diff.File, bool, error) {
	cmd := git(ctx, root, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames",
		"--src-prefix=a/", "--dst-prefix=b/", "--end-of-options", base, head)
	stderr := &textclip.HeadWriter{Max: 4096}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrGit, err)
	}
	files, truncated, perr := ParseDiff(bufio.NewReaderSize(out, 1<<16), opts)
	_, _ = io.Copy(io.Discard, out) // let git finish when the parser stopped at a cap
	if werr := cmd.Wait(); werr != nil {
		return nil, false, fmt.Errorf("%w: git diff: %s", ErrGit, strings.TrimSpace(stderr.String()))
	}
	if perr != nil {
		return nil, false, fmt.Errorf("git diff: %w", perr)
	}
	return files, truncated, nil
}

// treeFiles lists the regular files of a commit.
func treeFiles(ctx context.Context, root, rev string) ([]string, error) {
	out, err := gitOutput(ctx, root, 64<<20, "ls-tree", "-r", "-z", "--full-tree", rev)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, rec := range strings.Split(out, "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		if fs := strings.Fields(meta); len(fs) == 3 && fs[1] == "blob" && (fs[0] == "100644" || fs[0] == "100755") {
			files = append(files, name)
		}
	}
	return files, nil
}

// archive streams `git archive --format=tar rev`.
func archive(ctx context.Context, root, rev string) (io.ReadCloser, error) {
	cmd := git(ctx, root, "archive", "--format=tar", rev)
	stderr := &textclip.HeadWriter{Max: 4096}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGit, err)
	}
	return &cmdReader{r: out, cmd: cmd, stderr: stderr}, nil
}

type cmdReader struct {
	r      io.ReadCloser
	cmd    *exec.Cmd
	stderr *textclip.HeadWriter
	done   bool
}

func (c *cmdReader) Read(p []byte) (int, error) { return c.r.Read(p) }

// closeDrainBytes is what Close reads past the end of the tar it was read to:
// git pads the archive to a 10 KiB record. More left than that means the
// reader stopped early.
const closeDrainBytes = 64 << 10

// Close ends the archive. Read to its end, it waits for git and reports a
// failure; left with more unread, it stops git rather than read the rest,
// which the reader did not want.
func (c *cmdReader) Close() error {
	if c.done {
		return nil
	}
	c.done = true
	if n, _ := io.CopyN(io.Discard, c.r, closeDrainBytes); n == closeDrainBytes {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		return nil
	}
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("%w: git archive: %s", ErrGit, strings.TrimSpace(c.stderr.String()))
	}
	return nil
}

// cacheID is a checkout's identity for the dependency cache: the URL of its
// origin remote without credentials, else its directory.
func cacheID(ctx context.Context, root string) string {
	out, err := gitOutput(ctx, root, 4096, "remote", "get-url", "origin")
	if u := strings.TrimSpace(out); err == nil && u != "" {
		if p, err := url.Parse(u); err == nil && p.User != nil {
			p.User = nil
			u = p.String()
		}
		return "git:" + u
	}
	return "dir:" + root
}

// cacheScope is the dependency cache scope of a local review's head:
// depcache.DefaultScope when the head is the tip of the repository's default
// branch (origin/HEAD's branch, else main, else master; local or origin's),
// so its content is that branch's; else the branch it names ("ref:" and the
// full ref), else the commit ("rev:" and its id). Another branch never reads
// what this one wrote, nor writes what the default branch reads.
func cacheScope(ctx context.Context, root, headRef, head string) string {
	for _, ref := range defaultBranchRefs(ctx, root) {
		if tip, err := resolve(ctx, root, ref); err == nil && tip == head {
			return depcache.DefaultScope
		}
	}
	// A head starting with "-" never gets here (resolve refuses it); the
	// check stays next to the call. git 2.39 prints --end-of-options back
	// with --symbolic-full-name, so that is not used.
	if !strings.HasPrefix(headRef, "-") {
		if full, err := gitOutput(ctx, root, 4096, "rev-parse", "--symbolic-full-name", headRef); err == nil {
			// A ref too long for a scope is not cut (two refs would share
			// one): the commit names it instead.
			if scope := "ref:" + strings.TrimSpace(full); strings.HasPrefix(scope, "ref:refs/") && depcache.ValidScope(scope) == nil {
				return scope
			}
		}
	}
	return "rev:" + head
}

// defaultBranchRefs are the refs of the repository's default branch: the one
// origin/HEAD names, else main, else master; each as a local branch and as
// origin's.
func defaultBranchRefs(ctx context.Context, root string) []string {
	name := ""
	if out, err := gitOutput(ctx, root, 4096, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"); err == nil {
		name = strings.TrimPrefix(strings.TrimSpace(out), "refs/remotes/origin/")
	}
	if name == "" {
		for _, cand := range []string{"main", "master"} {
			if _, err := gitOutput(ctx, root, 256, "rev-parse", "--verify", "--quiet", "refs/heads/"+cand); err == nil {
				name = cand
				break
			}
		}
	}
	if name == "" {
		return nil
	}
	return []string{"refs/heads/" + name, "refs/remotes/origin/" + name}
}
