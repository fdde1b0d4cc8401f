// Package giteatest runs a real Gitea for tests: the pinned build of scripts/gitea/build.sh
// (ASTER_TEST_GITEA names its dist directory), started per test run on a loopback port as
// a non-root user, with SQLite in a temporary work directory, no mailer and no outside
// fetches, and helpers that create users and repositories, push branches over git HTTP and
// open pull requests through the API. Share one Server across the subtests of a test:
// starting one takes a few seconds.
package giteatest

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
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DefaultDist is where scripts/gitea/build.sh puts the pinned build.
const DefaultDist = "/var/cache/aster/gitea/v1.27.3/dist"

// DefaultUser is the system account Gitea runs as when the tests run as root (Gitea
// refuses to run as root). scripts/gitea/build.sh creates it.
const DefaultUser = "aster-gitea"

// Dist returns the directory of the Gitea build: ASTER_TEST_GITEA, else DefaultDist when
// it holds one. Without either the test is skipped, or fails in CI (CI set), where
// scripts/test.sh builds it first.
func Dist(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("ASTER_TEST_GITEA")
	if dir == "" {
		if _, err := os.Stat(filepath.Join(DefaultDist, "gitea")); err == nil {
			dir = DefaultDist
		}
	}
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Gitea build: ASTER_TEST_GITEA is unset and " + DefaultDist + " is absent (run scripts/gitea/build.sh)")
		}
		t.Skip("no Gitea build: set ASTER_TEST_GITEA or run scripts/gitea/build.sh")
	}
	for _, p := range []string{"gitea", "options", "templates"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("ASTER_TEST_GITEA=%s is not a Gitea dist directory (no %s); run scripts/gitea/build.sh", dir, p)
		}
	}
	return dir
}

// User is an account on the test Gitea.
type User struct {
	Login    string
	Password string
	Token    string // an access token: every scope, BotScopes for the bot
}

// Server is a running Gitea.
type Server struct {
	// URL is the root, "http://127.0.0.1:PORT/".
	URL string
	// Admin is the site administrator; Bot and Outsider are plain accounts.
	Admin, Bot, Outsider User
	dir                  string
	dist                 string
	cred                 *syscall.Credential
	log                  string
}

// Start runs a Gitea until the test ends and creates its three accounts.
func Start(t testing.TB) *Server {
	t.Helper()
	dist := Dist(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("Gitea needs git on the PATH")
	}
	s := &Server{dist: dist}
	s.cred = credential(t)
	// Not t.TempDir: its parents are private to root, and Gitea runs as another user.
	dir, err := os.MkdirTemp("", "aster-gitea-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"data", "repos", "log", "custom", "home"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	s.URL = "http://" + addr + "/"
	if err := os.WriteFile(filepath.Join(dir, "app.ini"), []byte(s.config(port)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.cred != nil {
		if err := chownTree(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	s.log = filepath.Join(dir, "log", "gitea.log")
	s.gitea(t, "migrate")
	s.Admin = s.createUser(t, "aster-admin", true, "all")
	// The bot's token has exactly the scopes docs/gitea.md asks for.
	s.Bot = s.createUser(t, "aster-bot", false, BotScopes)
	s.Outsider = s.createUser(t, "outsider", false, "all")

	ctx, cancel := context.WithCancel(context.Background())
	cmd := s.command(ctx, "web")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start gitea: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("gitea output (tail):\n%s\ngitea log (tail):\n%s", tail(out.Bytes(), 3000), tailFile(s.log, 4000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.URL + "api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("gitea exited before it served: %v\n%s", err, tail(out.Bytes(), 3000))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gitea did not answer within 60s\n%s", tail(out.Bytes(), 3000))
		}
	}
	return s
}

func (s *Server) config(port string) string {
	d := s.dir
	key := randomHex(32)
	return fmt.Sprintf(`APP_NAME = aster-test
RUN_MODE = prod
WORK_PATH = %[1]s
[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]s
ROOT_URL = http://127.0.0.1:%[2]s/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
APP_DATA_PATH = %[1]s/data
STATIC_ROOT_PATH = %[3]s
[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db
SQLITE_JOURNAL_MODE = WAL
[repository]
ROOT = %[1]s/repos
[security]
INSTALL_LOCK = true
SECRET_KEY = %[4]s
; webhooks to Aster on loopback (Gitea refuses loopback targets by default)
ALLOWED_HOST_LIST = loopback
[service]
DISABLE_REGISTRATION = true
[mailer]
ENABLED = false
[log]
MODE = file
LEVEL = Info
ROOT_PATH = %[1]s/log
[webhook]
DELIVER_TIMEOUT = 10
[cron.update_checker]
ENABLED = false
[indexer]
REPO_INDEXER_ENABLED = false
[oauth2]
ENABLED = false
[session]
PROVIDER = memory
[cache]
ADAPTER = memory
[actions]
ENABLED = false
[packages]
ENABLED = false
[git]
HOME_PATH = %[1]s/home
`, d, port, s.dist, key)
}

// command is the gitea binary with args, as Gitea's user, on the test's config.
func (s *Server) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--config", filepath.Join(s.dir, "app.ini"), "--work-path", s.dir}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(s.dist, "gitea"), full...)
	cmd.Dir = s.dir
	cmd.Env = []string{"HOME=" + filepath.Join(s.dir, "home"), "PATH=" + os.Getenv("PATH"), "GITEA_WORK_DIR=" + s.dir, "USER=" + userName(s.cred)}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// gitea runs one gitea command to completion and returns its output.
func (s *Server) gitea(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := s.command(ctx, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("gitea %s: %v\n%s", args[0], err, tail(out, 2000))
	}
	return string(out)
}

// BotScopes are the bot token's scopes: what docs/gitea.md tells operators to grant.
const BotScopes = "write:repository,write:issue,read:user"

func (s *Server) createUser(t testing.TB, login string, admin bool, scopes string) User {
	t.Helper()
	u := User{Login: login, Password: "pw-" + randomHex(12)}
	args := []string{"admin", "user", "create", "--username", login, "--password", u.Password,
		"--email", login + "@example.invalid", "--must-change-password=false", "--access-token",
		"--access-token-name", "test", "--access-token-scopes", scopes}
	if admin {
		args = append(args, "--admin")
	}
	out := s.gitea(t, args...)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if _, tok, ok := strings.Cut(sc.Text(), "Access token was successfully created... "); ok {
			u.Token = strings.TrimSpace(tok)
		}
	}
	if len(u.Token) < 20 {
		t.Fatalf("no access token for %s in the output of gitea admin user create", login)
	}
	return u
}

// Dir is the Gitea work directory (data, repositories, logs).
func (s *Server) Dir() string { return s.dir }

// Log returns the Gitea log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// API calls the REST API as the owner of token (path under /api/v1/), sends body as
// JSON when not nil, decodes a 2xx answer into out when not nil, and returns the status.
// It never calls t.Fatal: it may be used off the test goroutine.
func (s *Server) API(token, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+"api/v1/"+strings.TrimPrefix(path, "/"), rd)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "token "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, tail(b, 300))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// MustAPI is API that fails the test on an error (call it on the test goroutine).
func (s *Server) MustAPI(t testing.TB, token, method, path string, body, out any) {
	t.Helper()
	if _, err := s.API(token, method, path, body, out); err != nil {
		t.Fatal(err)
	}
}

func credential(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil // Gitea runs as the test's own user
	}
	name := os.Getenv("ASTER_TEST_GITEA_USER")
	if name == "" {
		name = DefaultUser
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("the tests run as root and Gitea refuses to: no user %s to run it as (scripts/gitea/build.sh creates it, or set ASTER_TEST_GITEA_USER)", name)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if uid == 0 {
		t.Fatalf("ASTER_TEST_GITEA_USER=%s is root; Gitea needs another user", name)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
}

func userName(c *syscall.Credential) string {
	if c == nil {
		if u, err := user.Current(); err == nil {
			return u.Username
		}
		return ""
	}
	if u, err := user.LookupId(strconv.Itoa(int(c.Uid))); err == nil {
		return u.Username
	}
	return ""
}

func chownTree(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "(no log)"
	}
	return tail(b, n)
}
