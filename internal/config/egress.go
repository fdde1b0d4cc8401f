package config

import (
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/units"
)

// Defaults of the egress relay (the `egress:` section of aster.yaml). The
// relay uses the same values for a Policy whose caps are left zero.
const (
	// DefaultEgressMaxBytes caps the bytes, both ways, of one run's tunnels.
	DefaultEgressMaxBytes = egress.DefaultMaxBytes
	// DefaultEgressMaxConnections caps the tunnels one run may open.
	DefaultEgressMaxConnections = egress.DefaultMaxConns
	// DefaultEgressConnectTimeout bounds resolving and connecting one tunnel.
	DefaultEgressConnectTimeout = egress.DefaultConnectTimeout
)

// EgressConfig is the `egress:` section of aster.yaml: the hosts an install
// phase may reach through the relay, and the per-run caps. Empty Allow (the
// default) means no way out at all.
type EgressConfig struct {
	// Allow lists "host[:port]" entries (port 443 when absent): exact host
	// names, never addresses; or mappings {host, port, addresses} whose
	// addresses admit private ranges for that host (a trusted file only).
	Allow []EgressAllow `yaml:"allow"`
	// MaxBytes is a size ("2g"); empty is DefaultEgressMaxBytes.
	MaxBytes string `yaml:"max_bytes"`
	// MaxConnections is a count; empty is DefaultEgressMaxConnections.
	MaxConnections string `yaml:"max_connections"`
	// Credentials are hosts the relay sends a credential to on the job's
	// behalf (a trusted file only); each host must be on Allow.
	Credentials []EgressCredential `yaml:"credentials"`
	// Profiles are named policies for sessions (a trusted file only): a
	// session's owner picks one its token may use (the token file's
	// egress=NAME), at creation or while the session runs.
	Profiles map[string]EgressProfile `yaml:"profiles"`
}

// EgressProfile is one egress.profiles entry: the allow list, caps and
// credentials of a session's relay. Each credential's host must be on the
// profile's own allow list.
type EgressProfile struct {
	Allow          []EgressAllow      `yaml:"allow"`
	MaxBytes       string             `yaml:"max_bytes"`
	MaxConnections string             `yaml:"max_connections"`
	Credentials    []EgressCredential `yaml:"credentials"`
}

// UnmarshalYAML refuses unknown keys.
func (e *EgressProfile) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: egress.profiles entry: want a mapping {allow, max_bytes, max_connections, credentials}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "allow", "max_bytes", "max_connections", "credentials":
		default:
			return fmt.Errorf("line %d: egress.profiles entry: unknown key %q (want allow, max_bytes, max_connections, credentials)", n.Content[i].Line, k)
		}
	}
	type raw EgressProfile
	var r raw
	if err := n.Decode(&r); err != nil {
		return err
	}
	*e = EgressProfile(r)
	return nil
}

// validProfileName is the form of a profile's name, as the token file
// names it: letters, digits, '-', '_', '.', at most 64 bytes.
func validProfileName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// EgressProfiles are the policies of c's egress.profiles by name (nil
// without any), each checked as egress.allow and the caps are; they log
// to log, and count into counters when set (the server's metrics).
func (c Config) EgressProfiles(log *slog.Logger, counters *egress.Counters) (map[string]*egress.Policy, error) {
	e, err := c.EgressSection()
	if err != nil || len(e.Profiles) == 0 {
		return nil, err
	}
	out := make(map[string]*egress.Policy, len(e.Profiles))
	for name, prof := range e.Profiles {
		if !validProfileName(name) {
			return nil, fmt.Errorf("egress.profiles %q: a name is letters, digits, '-', '_', '.', at most 64 bytes", name)
		}
		prefix := "egress.profiles." + name + "."
		p, err := buildPolicy(prof.Allow, nil, prof.MaxBytes, prof.MaxConnections, prefix, log)
		if err != nil {
			return nil, err
		}
		if err := addCredentials(p, prof.Credentials, prefix, log); err != nil {
			return nil, err
		}
		if counters != nil {
			p.Counters = counters
		}
		out[name] = p
	}
	return out, nil
}

// EgressCredential is one egress.credentials entry: the relay terminates
// the job's TLS to Host:Port, adds `Header: <contents of ValueFile>` to
// every request and verifies the upstream against CAFile (empty: the
// system roots). The value never reaches the sandbox.
type EgressCredential struct {
	Host      string `yaml:"host"`
	Port      int    `yaml:"port"`
	Header    string `yaml:"header"`
	ValueFile string `yaml:"value_file"`
	CAFile    string `yaml:"ca_file"`
}

// UnmarshalYAML refuses unknown keys, so a misspelt value_file is an error.
func (e *EgressCredential) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: egress.credentials entry: want a mapping {host, port, header, value_file, ca_file}", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "host", "port", "header", "value_file", "ca_file":
		default:
			return fmt.Errorf("line %d: egress.credentials entry: unknown key %q (want host, port, header, value_file, ca_file)", n.Content[i].Line, k)
		}
	}
	type raw EgressCredential
	var r raw
	if err := n.Decode(&r); err != nil {
		return err
	}
	*e = EgressCredential(r)
	return nil
}

// maxCredentialBytes bounds a value_file.
const maxCredentialBytes = 8 << 10

// credential reads and checks the entry. Errors name the file, never its
// contents.
func (e EgressCredential) credential(prefix string) (egress.Credential, error) {
	port := e.Port
	if port == 0 {
		port = 443
	}
	where := fmt.Sprintf("%scredentials entry %s", prefix, net.JoinHostPort(e.Host, strconv.Itoa(port)))
	r, err := egress.ParseRule(net.JoinHostPort(strings.TrimSpace(e.Host), strconv.Itoa(port)))
	if err != nil {
		return egress.Credential{}, fmt.Errorf("%s: %w", where, err)
	}
	header, err := egress.CheckHeaderName(strings.TrimSpace(e.Header))
	if err != nil {
		return egress.Credential{}, fmt.Errorf("%s: header: %w (for example Authorization)", where, err)
	}
	path := strings.TrimSpace(e.ValueFile)
	if path == "" {
		return egress.Credential{}, fmt.Errorf("%s: value_file is required (a file holding the header's value, e.g. \"Bearer <token>\")", where)
	}
	f, err := os.Open(path)
	if err != nil {
		return egress.Credential{}, fmt.Errorf("%s: value_file: %w", where, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCredentialBytes+1))
	if err != nil {
		return egress.Credential{}, fmt.Errorf("%s: value_file %s: %w", where, path, err)
	}
	if len(b) > maxCredentialBytes {
		return egress.Credential{}, fmt.Errorf("%s: value_file %s is larger than %d bytes", where, path, maxCredentialBytes)
	}
	value := strings.TrimRight(string(b), "\r\n")
	if err := egress.CheckHeaderValue(value); err != nil {
		return egress.Credential{}, fmt.Errorf("%s: value_file %s: %w", where, path, err)
	}
	c := egress.Credential{Rule: r, Header: header, Value: value}
	if p := strings.TrimSpace(e.CAFile); p != "" {
		pem, err := readCABundle(p)
		if err != nil {
			return egress.Credential{}, fmt.Errorf("%s: ca_file: %w", where, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return egress.Credential{}, fmt.Errorf("%s: ca_file %s: no certificate parses", where, p)
		}
	}
	return c, nil
}

// EgressAllow is one egress.allow entry: a "host[:port]" string, or a
// mapping naming the host, its port and the ranges its resolved addresses
// may fall in although the relay refuses them by default.
type EgressAllow struct {
	Host      string   `yaml:"host"`
	Port      int      `yaml:"port"`
	Addresses []string `yaml:"addresses"`
	plain     string
}

// UnmarshalYAML reads either form.
func (a *EgressAllow) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&a.plain)
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; k != "host" && k != "port" && k != "addresses" {
				return fmt.Errorf("line %d: egress.allow entry: unknown key %q (want host, port, addresses)", n.Content[i].Line, k)
			}
		}
	}
	type raw EgressAllow
	var r raw
	if err := n.Decode(&r); err != nil {
		return err
	}
	*a = EgressAllow(r)
	return nil
}

// rule parses the entry into a relay rule and its admitted ranges.
func (a EgressAllow) rule() (egress.Rule, []netip.Prefix, error) {
	if a.plain != "" || a.Host == "" {
		r, err := egress.ParseRule(a.plain)
		return r, nil, err
	}
	port := a.Port
	if port == 0 {
		port = 443
	}
	r, err := egress.ParseRule(net.JoinHostPort(a.Host, strconv.Itoa(port)))
	if err != nil {
		return r, nil, err
	}
	pre, err := egress.ParseAddresses(r, a.Addresses)
	return r, pre, err
}

// EgressSection decodes the `egress:` section of c (absent: nothing allowed).
func (c Config) EgressSection() (EgressConfig, error) {
	var e EgressConfig
	err := c.decodeSection("egress", &e)
	return e, err
}

// EgressPolicy is the relay policy of c's `egress:` section with extra
// entries (the repeatable --egress-allow flag) added to its list. Every entry
// and cap is checked: a bad one is an error naming it, so a typo fails at
// start rather than refusing every tunnel later. The policy logs to log.
func (c Config) EgressPolicy(extra []string, log *slog.Logger) (*egress.Policy, error) {
	e, err := c.EgressSection()
	if err != nil {
		return nil, err
	}
	p, err := buildPolicy(e.Allow, extra, e.MaxBytes, e.MaxConnections, "egress.", log)
	if err != nil {
		return nil, err
	}
	if err := addCredentials(p, e.Credentials, "egress.", log); err != nil {
		return nil, err
	}
	return p, nil
}

// addCredentials reads and checks the credentials entries into p; each
// host must be on p's allow list. prefix names the setting in errors.
func addCredentials(p *egress.Policy, creds []EgressCredential, prefix string, log *slog.Logger) error {
	seen := map[egress.Rule]bool{}
	for _, r := range p.Allow {
		seen[r] = true
	}
	for _, e := range creds {
		cred, err := e.credential(prefix)
		if err != nil {
			return err
		}
		if !seen[cred.Rule] {
			return fmt.Errorf("%scredentials entry %s: the host is not on %sallow; add it there (with its addresses when it is on a private address)", prefix, cred.Rule, prefix)
		}
		for _, other := range p.Credentials {
			if other.Rule == cred.Rule {
				return fmt.Errorf("%scredentials: two entries for %s", prefix, cred.Rule)
			}
		}
		p.Credentials = append(p.Credentials, cred)
		if log != nil {
			roots := "the system roots"
			if ca := strings.TrimSpace(e.CAFile); ca != "" {
				roots = ca
			}
			log.Warn("egress relay adds a credential to every request to this host; jobs see the relay's certificate, never the value",
				"setting", strings.TrimSuffix(prefix, ".")+".credentials", "host", cred.Rule.String(), "header", cred.Header, "value_file", strings.TrimSpace(e.ValueFile), "upstream_roots", roots)
		}
	}
	return nil
}

// buildPolicy is the relay policy of an allow list (with extra
// "host[:port]" entries) and caps; prefix names the setting in errors.
func buildPolicy(allow []EgressAllow, extra []string, maxBytes, maxConns, prefix string, log *slog.Logger) (*egress.Policy, error) {
	var rules []egress.Rule
	admit := map[egress.Rule][]netip.Prefix{}
	seen := map[egress.Rule]bool{}
	for _, a := range allow {
		r, pre, err := a.rule()
		if err != nil {
			return nil, err
		}
		if !seen[r] {
			seen[r] = true
			rules = append(rules, r)
		}
		if len(pre) > 0 {
			admit[r] = append(admit[r], pre...)
		}
	}
	flagRules, err := egress.ParseAllow(extra)
	if err != nil {
		return nil, err
	}
	for _, r := range flagRules {
		if !seen[r] {
			seen[r] = true
			rules = append(rules, r)
		}
	}
	p := &egress.Policy{Allow: rules, MaxBytes: DefaultEgressMaxBytes, MaxConns: DefaultEgressMaxConnections,
		ConnectTimeout: DefaultEgressConnectTimeout, Logger: log, Counters: &egress.Counters{}}
	if s := strings.TrimSpace(maxBytes); s != "" {
		n, err := units.ParseBytes(s)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%smax_bytes %q: want a positive size such as 2g", prefix, maxBytes)
		}
		p.MaxBytes = n
	}
	if s := strings.TrimSpace(maxConns); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > 1_000_000 {
			return nil, fmt.Errorf("%smax_connections %q: want a positive count", prefix, maxConns)
		}
		p.MaxConns = n
	}
	if len(admit) > 0 {
		p.Addresses = admit
		if log != nil {
			for _, line := range p.AdmittedRanges() {
				log.Warn("egress relay admits addresses the relay refuses by default", "admission", line)
			}
		}
	}
	return p, nil
}
