package sandboxapi

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
)

// sessionCAFile is where a session on a server whose profiles inject
// credentials finds the roots it trusts (relative to /work): the host's
// roots and the certificate of the session's own CA, never its key.
const sessionCAFile = ".aster/egress-ca.pem"

// sessionCALifetime is added to the longest session life for the validity
// of a session's CA.
const sessionCALifetime = time.Hour

// profileSet is the server's egress profiles, which a reload replaces.
type profileSet struct {
	mu sync.RWMutex
	by map[string]*egress.Policy
	// hostRoots is the host's bundle of roots, read once.
	hostRoots func() []byte
}

func newProfileSet(by map[string]*egress.Policy) *profileSet {
	return &profileSet{by: by, hostRoots: sync.OnceValue(egress.HostRoots)}
}

func (ps *profileSet) get() map[string]*egress.Policy {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.by
}

// credentialHosts are the credentialed hosts of every profile, sorted.
func credentialHosts(by map[string]*egress.Policy) []string {
	var hosts []string
	for _, p := range by {
		for _, h := range p.CredentialHosts() {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	slices.Sort(hosts)
	return hosts
}

// sessionSwitch is the relay of a session being made with the profile
// name (nil on a server without profiles). On a server whose profiles
// inject credentials it has a CA of its own, which spec's sandbox trusts:
// sessionCAFile and the CA variables naming it (unless spec's env sets
// them) are added to spec.
func (s *Server) sessionSwitch(r *http.Request, spec *sandbox.SessionSpec, name string) (*egress.Switch, error) {
	profiles := s.profiles.get()
	if len(profiles) == 0 {
		if name != "" {
			return nil, sandbox.Invalidf("egress profile %q: this server has no egress profiles (aster.yaml egress.profiles)", clipPath(name))
		}
		return nil, nil
	}
	p, err := s.egressProfile(r, profiles, name)
	if err != nil {
		return nil, err
	}
	sw, err := egress.NewCredentialSwitch(spec.ID, credentialHosts(profiles), s.mgr.SessionMaxTTL()+sessionCALifetime)
	if err != nil {
		return nil, fmt.Errorf("%w: the session's certificate authority: %v", sandbox.ErrUnavailable, err)
	}
	if err := sw.Set(name, p); err != nil {
		sw.Close()
		return nil, sandbox.Invalidf("egress profile %q: %v", name, err)
	}
	if ca := sw.CACertPEM(); ca != nil {
		spec.Files = maps.Clone(spec.Files)
		if spec.Files == nil {
			spec.Files = map[string][]byte{}
		}
		spec.Files[sessionCAFile] = egress.TrustBundle(s.profiles.hostRoots(), ca)
		spec.Env = maps.Clone(spec.Env)
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		for _, k := range egress.CAVariables {
			if _, set := spec.Env[k]; !set {
				spec.Env[k] = "/work/" + sessionCAFile
			}
		}
	}
	return sw, nil
}

// sessionWire is the session id's answer, with its egress profile.
func (s *Server) sessionWire(id string, i sandbox.SessionInfo) api.Session {
	s.sessions.mu.Lock()
	var sw *egress.Switch
	if o := s.sessions.byID[id]; o != nil {
		sw = o.egress
	}
	s.sessions.mu.Unlock()
	return withProfile(sessionWire(i), sw)
}

func withProfile(w api.Session, sw *egress.Switch) api.Session {
	if sw != nil {
		w.EgressProfile = sw.Profile()
	}
	return w
}

// egressProfile is the policy of the profile name among profiles, when the
// caller's token may use it ("" is none, always allowed).
func (s *Server) egressProfile(r *http.Request, profiles map[string]*egress.Policy, name string) (*egress.Policy, error) {
	if name == "" {
		return nil, nil
	}
	p, ok := profiles[name]
	if !ValidProfileName(name) || !ok {
		return nil, sandbox.Invalidf("egress profile %q is not one of this server's (aster.yaml egress.profiles): %s", clipPath(name), profileNames(profiles))
	}
	if s.opts.Tokens != nil {
		_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !slices.Contains(s.opts.Tokens.Profiles(strings.TrimSpace(tok)), name) {
			return nil, fmt.Errorf("%w: this token may not use egress profile %q (the operator grants profiles with egress=%s after the token in the token file)", api.ErrForbidden, name, name)
		}
	}
	return p, nil
}

func profileNames(profiles map[string]*egress.Policy) string {
	if len(profiles) == 0 {
		return "it has none"
	}
	return "it has " + strings.Join(slices.Sorted(maps.Keys(profiles)), ", ")
}

// setSessionEgress answers PUT /v1/sessions/{id}/egress: the session's
// relay takes the profile, and the previous profile's tunnels are closed.
func (s *Server) setSessionEgress(w http.ResponseWriter, r *http.Request, id string, sess *sandbox.Sandbox) {
	var req api.SessionEgressRequest
	if err := s.readSmallJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.egressProfile(r, s.profiles.get(), req.Profile)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.sessions.mu.Lock()
	var sw *egress.Switch
	if o := s.sessions.byID[id]; o != nil {
		sw = o.egress
	}
	s.sessions.mu.Unlock()
	if sw == nil {
		s.writeError(w, r, fmt.Errorf("%w: this server has no egress profiles (aster.yaml egress.profiles)", api.ErrNotFound))
		return
	}
	if err := sw.Covers(p); err != nil {
		s.writeError(w, r, sandbox.Invalidf("egress profile %q: %v; a session made now can use it", req.Profile, err))
		return
	}
	if err := sw.Set(req.Profile, p); err != nil {
		s.writeError(w, r, fmt.Errorf("%w: %v", sandbox.ErrSessionGone, err))
		return
	}
	s.log.Info("session egress profile", "session", id, "profile", req.Profile, "owner", s.owner(r))
	s.writeJSON(w, http.StatusOK, s.sessionWire(id, sess.Info()))
}
