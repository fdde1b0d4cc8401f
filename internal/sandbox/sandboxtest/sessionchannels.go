package sandboxtest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
)

// SessionChannelOptions describe what a runtime's holder differs in.
type SessionChannelOptions struct {
	// NoAmbientSet: the sandbox's /proc/PID/status has no CapAmb line
	// (gVisor).
	NoAmbientSet bool
}

// SessionChannelSuite: what a holder serving execs over channels of its
// own streams adds (SECURITY.md Q15), against rt, a runtime whose session
// holder serves execs: the holder keeps CAP_SETUID/SETGID and nothing else
// while a job, another uid with no capability, can neither signal, ptrace,
// prlimit nor reach its streams; a job's output holding channel frames
// stays data of its own exec; stdin past the holder's window; a cancelled
// exec leaves nothing; concurrent execs keep their outputs apart. (An exec
// that OOMs and the session living on is SessionSuite's
// PerExecStatusesAndTheSessionLivesOn, over a channel too.)
func SessionChannelSuite(t *testing.T, rt sandbox.Runtime, o SessionChannelOptions) {
	m := SessionManager(t, rt, sandbox.SessionOptions{})
	s, err := m.OpenSession(t.Context(), sandbox.SessionSpec{})
	if err != nil {
		t.Fatalf("open session: %v", err)
	}
	defer s.Close(context.Background())
	exec := func(t *testing.T, e sandbox.ExecSpec) sandbox.Result {
		t.Helper()
		res, err := s.Exec(t.Context(), e)
		if err != nil {
			t.Fatalf("exec %q: %v", e.Argv, err)
		}
		return res
	}

	t.Run("HolderOutOfReach", func(t *testing.T) {
		res := exec(t, sandbox.ExecSpec{Argv: []string{"python3", "-c", holderProbe}})
		if res.Status != sandbox.StatusOK {
			t.Fatalf("probe: %s %s stderr=%q", res.Status, res.Error, res.Stderr.Data)
		}
		got := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout.Data)), "\n") {
			k, v, _ := strings.Cut(l, " ")
			got[k] = v
		}
		want := map[string]string{
			// The holder: CAP_SETGID and CAP_SETUID, nothing inheritable,
			// ambient or in the bounding set.
			"holder-caps": "eff=00000000000000c0 prm=00000000000000c0 inh=0000000000000000 bnd=0000000000000000 amb=0000000000000000",
			// The job: nothing at all, no_new_privs.
			"job-caps":    "eff=0000000000000000 prm=0000000000000000 nnp=1",
			"kill-KILL":   "EPERM",
			"kill-TERM":   "EPERM",
			"kill-STOP":   "EPERM",
			"kill-0":      "EPERM",
			"ptrace":      "EPERM",
			"prlimit":     "EPERM",
			"holder-fd-1": "EACCES",
			"holder-fd-0": "EACCES",
		}
		if o.NoAmbientSet {
			want["holder-caps"] = strings.Replace(want["holder-caps"], "amb=0000000000000000", "amb=?", 1)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: got %q, want %q", k, got[k], v)
			}
		}
		if got["holder-uid"] == "" || got["holder-uid"] == got["job-uid"] {
			t.Errorf("holder uid %q, job uid %q: want two different uids", got["holder-uid"], got["job-uid"])
		}
		if t.Failed() {
			t.Logf("probe said:\n%s", res.Stdout.Data)
		}
		// The holder is alive and serves the next exec.
		if res := exec(t, sandbox.ExecSpec{Argv: []string{"echo", "alive"}}); res.Status != sandbox.StatusOK || string(res.Stdout.Data) != "alive\n" {
			t.Fatalf("after the probe: %s %q", res.Status, res.Stdout.Data)
		}
	})

	t.Run("ForgedFramesStayData", func(t *testing.T) {
		// A job prints what the holder would send for other execs: their
		// result (exit 0) and their end, for every channel it could guess,
		// while another exec that exits 7 runs beside it.
		forged := forgedFrames(1, 256)
		script := fmt.Sprintf("for i in 1 2 3 4 5 6 7 8 9 10; do echo %s | base64 -d; sleep 0.1; done", base64.StdEncoding.EncodeToString(forged))
		var wg sync.WaitGroup
		var forger, victim sandbox.Result
		var ferr, verr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			forger, ferr = s.Exec(context.Background(), sandbox.ExecSpec{Argv: []string{"sh", "-c", script}, OutputBytes: 1 << 20})
		}()
		go func() {
			defer wg.Done()
			victim, verr = s.Exec(context.Background(), sandbox.ExecSpec{Argv: []string{"sh", "-c", "sleep 1; echo victim; exit 7"}})
		}()
		wg.Wait()
		if ferr != nil || verr != nil {
			t.Fatalf("execs: %v / %v", ferr, verr)
		}
		if victim.Status != sandbox.StatusExitNonzero || victim.ExitCode != 7 || string(victim.Stdout.Data) != "victim\n" {
			t.Fatalf("the exec beside the forger: %s exit=%d stdout=%q (%s), want exit_nonzero 7 %q",
				victim.Status, victim.ExitCode, victim.Stdout.Data, victim.Error, "victim\n")
		}
		if forger.Status != sandbox.StatusOK || !bytes.Equal(forger.Stdout.Data, bytes.Repeat(forged, 10)) {
			t.Fatalf("the forger: %s, %d bytes of stdout, want ok with its %d bytes as data", forger.Status, len(forger.Stdout.Data), 10*len(forged))
		}
	})

	t.Run("StdinPastTheWindowAndCancel", func(t *testing.T) {
		// 3 MiB of stdin: past the holder's 256 KiB window, so granted
		// piecemeal over the channel.
		in := bytes.Repeat([]byte("0123456789abcdef"), 3<<16)
		res := exec(t, sandbox.ExecSpec{Argv: []string{"sh", "-c", "cat | md5sum"}, Stdin: bytes.NewReader(in)})
		want := fmt.Sprintf("%x  -\n", md5.Sum(in))
		if res.Status != sandbox.StatusOK || string(res.Stdout.Data) != want {
			t.Fatalf("cat of 3 MiB: %s %q (%s), want %q", res.Status, res.Stdout.Data, res.Error, want)
		}
		// A caller that goes away: the host closes the channel, the holder
		// kills the job; the session lives on with nothing of it left.
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		res, _ = s.Exec(ctx, sandbox.ExecSpec{Argv: []string{"sh", "-c", "exec sleep 77"}})
		if res.Status != sandbox.StatusKilled {
			t.Fatalf("cancelled exec: %s (%s), want killed", res.Status, res.Error)
		}
		left := exec(t, sandbox.ExecSpec{Argv: []string{"sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"}})
		if strings.Contains(string(left.Stdout.Data), "sleep 77") {
			t.Fatalf("the cancelled job is still there: %q", left.Stdout.Data)
		}
	})

	t.Run("ConcurrentOutputsApart", func(t *testing.T) {
		const n = 6
		var wg sync.WaitGroup
		res := make([]sandbox.Result, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := string(rune('a' + i))
				prog := fmt.Sprintf("import sys\nfor _ in range(64):\n sys.stdout.write(%q*4096); sys.stdout.flush(); sys.stderr.write(%q*1024); sys.stderr.flush()\nsys.exit(%d)", c, strings.ToUpper(c), i)
				res[i], errs[i] = s.Exec(context.Background(), sandbox.ExecSpec{Argv: []string{"python3", "-c", prog}, OutputBytes: 1 << 20})
			}()
		}
		wg.Wait()
		for i := range n {
			c := string(rune('a' + i))
			r := res[i]
			if errs[i] != nil || r.ExitCode != i {
				t.Fatalf("exec %d: %v %s exit=%d (%s)", i, errs[i], r.Status, r.ExitCode, r.Error)
			}
			if string(r.Stdout.Data) != strings.Repeat(c, 64*4096) || string(r.Stderr.Data) != strings.Repeat(strings.ToUpper(c), 64*1024) {
				t.Fatalf("exec %d: stdout %d bytes, stderr %d bytes, not only its own", i, len(r.Stdout.Data), len(r.Stderr.Data))
			}
		}
	})
}

// holderProbe, run as a job, reports what it can do to the holder (PID 1).
const holderProbe = `
import ctypes, errno, os, resource, signal
def status(pid):
    d = {}
    for l in open('/proc/%s/status' % pid):
        k, _, v = l.partition(':')
        d[k] = v.strip()
    return d
h, me = status(1), status('self')
print('holder-uid', h['Uid'].split()[0])
print('job-uid', me['Uid'].split()[0])
print('holder-caps eff=%s prm=%s inh=%s bnd=%s amb=%s' % (h['CapEff'], h['CapPrm'], h['CapInh'], h['CapBnd'], h.get('CapAmb', '?')))
libc = ctypes.CDLL(None, use_errno=True)
print('job-caps eff=%s prm=%s nnp=%d' % (me['CapEff'], me['CapPrm'], libc.prctl(39, 0, 0, 0, 0)))
def name(e):
    return errno.errorcode.get(e, str(e))
for sig, n in ((signal.SIGKILL, 'KILL'), (signal.SIGTERM, 'TERM'), (signal.SIGSTOP, 'STOP'), (0, '0')):
    try:
        os.kill(1, sig)
        print('kill-' + n, 'sent')
    except OSError as e:
        print('kill-' + n, name(e.errno))
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
r = libc.ptrace(16, 1, None, None)
print('ptrace', 'attached' if r == 0 else name(ctypes.get_errno()))
try:
    resource.prlimit(1, resource.RLIMIT_NOFILE, (1, 1))
    print('prlimit', 'changed')
except OSError as e:
    print('prlimit', name(e.errno))
for fd in (0, 1):
    try:
        open('/proc/1/fd/%d' % fd, 'wb')
        print('holder-fd-%d' % fd, 'opened')
    except OSError as e:
        print('holder-fd-%d' % fd, name(e.errno))
`

// forgedFrames is what a holder would send to end channels first..last with
// a result of exit 0: a channel frame holding a result frame, then a channel
// end, for each; and a bare result frame.
func forgedFrames(first, last uint32) []byte {
	var b bytes.Buffer
	frame := func(t initproto.Type, p []byte) {
		b.WriteByte(byte(t))
		_ = binary.Write(&b, binary.BigEndian, uint32(len(p)))
		b.Write(p)
	}
	result := []byte(`{"exit_code":0,"signal":0}`)
	inner := append([]byte{byte(initproto.TypeResult)}, binary.BigEndian.AppendUint32(nil, uint32(len(result)))...)
	inner = append(inner, result...)
	for id := first; id <= last; id++ {
		frame(initproto.TypeChan, append(binary.BigEndian.AppendUint32(nil, id), inner...))
		frame(initproto.TypeChanEnd, initproto.EncodeChanEnd(id))
	}
	frame(initproto.TypeResult, result)
	return b.Bytes()
}
