package securitytest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

// probeConnect is a Python helper: connect(family, type, addr) → "name=result".
const probeConnect = `
import socket, errno
def probe(name, fam, typ, addr, send=False):
    s = socket.socket(fam, typ)
    s.settimeout(3)
    try:
        if send:
            s.sendto(b"x", addr)
            s.recvfrom(16)
        else:
            s.connect(addr)
        print("%s=connected" % name)
    except OSError as e:
        print("%s=%s" % (name, errno.errorcode.get(e.errno, type(e).__name__) if e.errno else type(e).__name__))
    finally:
        s.close()
`

func (s *suite) netProbe(t *testing.T, body string) map[string]string {
	t.Helper()
	res := s.py(t, probeConnect+body, sandbox.Limits{TimeoutMS: 30000})
	wantStatus(t, res, sandbox.StatusOK)
	return kv(res)
}

func wantFailed(t *testing.T, got map[string]string, names ...string) {
	t.Helper()
	for _, n := range names {
		v, ok := got[n]
		if !ok {
			t.Errorf("%s: probe did not run", n)
			continue
		}
		if v == "connected" {
			t.Errorf("%s: connected, want failure", n)
		}
	}
}

// D1: TCP to public and private addresses fails; only lo exists.
func (s *suite) d1TCP(t *testing.T) {
	got := s.netProbe(t, `
probe("public", socket.AF_INET, socket.SOCK_STREAM, ("1.1.1.1", 443))
probe("private10", socket.AF_INET, socket.SOCK_STREAM, ("10.0.0.1", 80))
probe("private192", socket.AF_INET, socket.SOCK_STREAM, ("192.168.1.1", 80))
# The kernel's own list (netlink), not sysfs: gVisor has no /sys/class/net.
print("ifaces=%s" % ",".join(sorted(name for _, name in socket.if_nameindex())))
`)
	wantFailed(t, got, "public", "private10", "private192")
	if got["ifaces"] != "lo" {
		t.Fatalf("interfaces %q, want only lo", got["ifaces"])
	}
}

// D2: UDP and DNS fail: DNS is an exfiltration channel.
func (s *suite) d2UDPDNS(t *testing.T) {
	got := s.netProbe(t, `
probe("udp", socket.AF_INET, socket.SOCK_DGRAM, ("8.8.8.8", 53), send=True)
try:
    socket.getaddrinfo("example.com", 443)
    print("dns=resolved")
except OSError as e:
    print("dns=%s" % type(e).__name__)
try:
    socket.getaddrinfo("exfil-aster-test.example.org", 53, type=socket.SOCK_DGRAM)
    print("dns2=resolved")
except OSError as e:
    print("dns2=%s" % type(e).__name__)
`)
	wantFailed(t, got, "udp")
	if got["dns"] == "resolved" || got["dns2"] == "resolved" || got["dns"] == "" {
		t.Fatalf("DNS resolved inside the sandbox: %v", got)
	}
}

// D3: raw and ICMP sockets are refused.
func (s *suite) d3Raw(t *testing.T) {
	got := s.netProbe(t, `
for name, typ, proto in (("raw", socket.SOCK_RAW, socket.IPPROTO_ICMP), ("icmp_dgram", socket.SOCK_DGRAM, socket.IPPROTO_ICMP), ("packet", socket.SOCK_RAW, 0)):
    try:
        fam = socket.AF_PACKET if name == "packet" else socket.AF_INET
        s = socket.socket(fam, typ, proto)
        try:
            s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", ("1.1.1.1", 0))
            print("%s=sent" % name)
        except OSError as e:
            print("%s=%s" % (name, errno.errorcode.get(e.errno)))
    except OSError as e:
        print("%s=%s" % (name, errno.errorcode.get(e.errno)))
`)
	for _, n := range []string{"raw", "icmp_dgram", "packet"} {
		if v := got[n]; v == "" || v == "sent" {
			t.Errorf("%s socket: %q, want refused", n, v)
		}
	}
}

// D4: no global IPv6 address; IPv6 connect fails.
func (s *suite) d4IPv6(t *testing.T) {
	got := s.netProbe(t, `
probe("v6public", socket.AF_INET6, socket.SOCK_STREAM, ("2606:4700:4700::1111", 443))
try:
    addrs = [l.split()[0] for l in open("/proc/net/if_inet6")]
except OSError:
    addrs = []
glob = [a for a in addrs if not a.startswith("fe80") and a != "0" * 31 + "1"]
print("v6global=%d" % len(glob))
`)
	wantFailed(t, got, "v6public")
	if got["v6global"] != "0" {
		t.Fatalf("sandbox has a global IPv6 address: %v", got)
	}
}

// D5: the cloud metadata address and the host's own services are unreachable.
func (s *suite) d5Host(t *testing.T) {
	// A service on the host, listening on every address.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "host service")
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	var hostIPs []string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				hostIPs = append(hostIPs, ipn.IP.String())
			}
		}
	}
	var b strings.Builder
	b.WriteString(`probe("metadata", socket.AF_INET, socket.SOCK_STREAM, ("169.254.169.254", 80))` + "\n")
	b.WriteString(fmt.Sprintf(`probe("sandbox_lo_port", socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", %d))`+"\n", port))
	names := []string{"metadata", "sandbox_lo_port"}
	for i, ip := range append(hostIPs, "172.17.0.1") {
		n := fmt.Sprintf("host%d", i)
		names = append(names, n)
		b.WriteString(fmt.Sprintf(`probe(%q, socket.AF_INET, socket.SOCK_STREAM, (%q, %d))`+"\n", n, ip, port))
	}
	got := s.netProbe(t, b.String())
	wantFailed(t, got, names...)
	if len(hostIPs) == 0 {
		t.Log("no non-loopback host address found; probed the Docker gateway only")
	}
}
