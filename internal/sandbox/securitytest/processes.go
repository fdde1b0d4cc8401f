package securitytest

import (
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// C1: a daemon left behind by a job that exits 0 does not keep the run alive,
// and nothing of the job remains afterwards.
func (s *suite) c1Daemon(t *testing.T) {
	for _, script := range []string{
		// detached, output redirected
		"setsid nohup sleep 300 >/dev/null 2>&1 & sleep 0.2; echo done",
		// detached but still holding our stdout open
		"setsid sleep 300 & sleep 0.2; echo done",
	} {
		start := time.Now()
		res := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", script}, Limits: sandbox.Limits{TimeoutMS: 60000}})
		wantStatus(t, res, sandbox.StatusOK)
		if string(res.Stdout.Data) != "done\n" {
			t.Fatalf("%q: %s", script, short(res))
		}
		if el := time.Since(start); el > 15*time.Second+s.tgt.StartAllowance {
			t.Fatalf("%q: the daemon kept the run alive for %s", script, el)
		}
		s.assertGone(t, res.ID)
	}
}

// C2: a double-forked child that ignores SIGTERM is killed; zero leftovers.
func (s *suite) c2DoubleFork(t *testing.T) {
	start := time.Now()
	res := s.py(t, `
import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        time.sleep(300)
    os._exit(0)
time.sleep(0.3)
print("parent-exit")
`, sandbox.Limits{TimeoutMS: 60000})
	wantStatus(t, res, sandbox.StatusOK)
	if el := time.Since(start); el > 15*time.Second+s.tgt.StartAllowance {
		t.Fatalf("the double-forked child kept the run alive for %s", el)
	}
	s.assertGone(t, res.ID)
}

// C3: a hundred zombies are reaped. The zombies' parent exits, they pass to
// aster-init, and a later process of the same job sees none left.
func (s *suite) c3Zombies(t *testing.T) {
	res := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", `
python3 -c '
import os, time
for i in range(100):
    if os.fork() == 0:
        os._exit(0)
def zombies():
    n = 0
    for p in os.listdir("/proc"):
        try:
            n += p.isdigit() and open("/proc/%s/stat" % p).read().split(") ")[1][0] == "Z"
        except OSError:
            pass
    return n
# Wait for the children to exit, as long as a loaded machine takes.
for i in range(400):
    if zombies() >= 100:
        break
    time.sleep(0.05)
print("zombies_before=%d" % zombies(), flush=True)
os._exit(0)
'
# Their parent gone, init must reap them: give it as long.
for i in $(seq 200); do
  [ "$(ps -eo stat= | grep -c '^Z')" = 0 ] && break
  sleep 0.1
done
echo "zombies_after=$(ps -eo stat= | grep -c '^Z')"
`}, Limits: sandbox.Limits{TimeoutMS: s.slow(60_000)}})
	got := kv(res)
	if got["zombies_before"] != "100" {
		t.Fatalf("the probe did not make 100 zombies: %s", short(res))
	}
	if got["zombies_after"] != "0" {
		t.Fatalf("zombies were not reaped: %s", short(res))
	}
}

// C4: a job that traps SIGTERM at the deadline is SIGKILLed; the sandbox goes.
func (s *suite) c4TrapTerm(t *testing.T) {
	start := time.Now()
	res := s.run(t, sandbox.Spec{
		// `wait` is interrupted by a trapped signal at once (a foreground
		// sleep is not: sh runs the trap only after it, which on a loaded
		// machine could miss the grace before SIGKILL).
		Argv:   []string{"sh", "-c", `trap 'echo got-term' TERM; while :; do sleep 1 & wait $!; done`},
		Limits: sandbox.Limits{TimeoutMS: 2000},
	})
	wantStatus(t, res, sandbox.StatusTimeout)
	if el := time.Since(start); el > 10*time.Second+s.tgt.StartAllowance {
		t.Fatalf("a SIGTERM-trapping job was ended after %s", el)
	}
	if !strings.Contains(string(res.Stdout.Data), "got-term") || res.Signal != "SIGKILL" {
		t.Fatalf("want SIGTERM seen and then SIGKILL: %s", short(res))
	}
	s.assertGone(t, res.ID)
}
