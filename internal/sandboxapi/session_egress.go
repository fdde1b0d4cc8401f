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
	// gen counts the reloads: a switch decided on an older set is
	// reconciled with the new one.
	gen uint64
	// hostRoots is the host's bundle of roots, read once.
	hostRoots func() []byte
}

func newProfileSet(by map[string]*egress.Policy) *profileSet {
	return &profileSet{by: by, hostRoots: sync.OnceValue(egress.HostRoots)}
}

func (ps *profileSet) getGen() (map[string]*egress.Policy, uint64) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.by, ps.gen
}

// ReloadSummary says what a reload of the egress profiles did to the live
// sessions.
type ReloadSummary struct {
	// Profiles are the names of the new set.
	Profiles []string
	// Kept sessions have a profile whose definition did not change (their
	// tunnels stay open); Changed ones were switched to its new definition
	// (their tunnels closed); Cleared ones lost their profile (removed, or
	// now sending a credential the session's CA cannot sign for).
	Kept, Changed, Cleared int
}

// SetEgressProfiles replaces the server's egress profiles (a reload of
// aster.yaml egress.profiles, checked whole by the caller). Each live
// session keeps its profile's name and is decided by its new definition
// at once: unchanged, it keeps its tunnels; changed, it is switched as
// PUT …/egress would; removed, or with a credential its CA was not made
// for, it is left no profile, and every tunnel it asks for is refused
// saying why. Sessions made on a server without profiles have no relay
// and stay without one; the token file's grants are not re-read.
func (s *Server) SetEgressProfiles(by map[string]*egress.Policy) ReloadSummary {
	s.profiles.mu.Lock()
	s.profiles.by = by
	s.profiles.gen++
	s.profiles.mu.Unlock()
	sum := ReloadSummary{Profiles: slices.Sorted(maps.Keys(by))}
	type live struct {
		id string
		sw *egress.Switch
	}
	var all []live
	s.sessions.mu.Lock()
	for id, o := range s.sessions.byID {
		if o.egress != nil {
			all = append(all, live{id, o.egress})
		}
	}
	s.sessions.mu.Unlock()
	for _, l := range all {
		switch outcome := s.reconcile(l.id, l.sw, by); outcome {
		case reconcileKept:
			sum.Kept++
		case reconcileChanged:
			sum.Changed++
		case reconcileCleared:
			sum.Cleared++
		}
	}
	return sum
}

const (
	reconcileNone = iota
	reconcileKept
	reconcileChanged
	reconcileCleared
)

// reconcile decides the session id's relay by the profiles by.
func (s *Server) reconcile(id string, sw *egress.Switch, by map[string]*egress.Policy) int {
	name := sw.Profile()
	if name == "" {
		return reconcileNone
	}
	p, ok := by[name]
	if !ok {
		why := fmt.Sprintf("the operator removed profile %q from the server; choose another with PUT /v1/sessions/{id}/egress", name)
		sw.Clear(why)
		s.log.Warn("session egress profile removed by a reload", "session", id, "profile", name)
		return reconcileCleared
	}
	if p.Equal(sw.Policy()) {
		return reconcileKept
	}
	if err := sw.Covers(p); err != nil {
		sw.Clear(fmt.Sprintf("profile %q changed: %v; a session made now can use it", name, err))
		s.log.Warn("session egress profile cleared by a reload", "session", id, "profile", name, "err", err)
		return reconcileCleared
	}
	if err := sw.Set(name, p); err != nil {
		return reconcileNone // the session has ended
	}
	s.log.Info("session egress profile re-decided by a reload", "session", id, "profile", name)
	return reconcileChanged
}

// settle reconciles sw with the profiles when they were reloaded since
// gen, the generation sw was decided on.
func (s *Server) settle(id string, sw *egress.Switch, gen uint64) {
	if by, now := s.profiles.getGen(); now != gen {
		s.reconcile(id, sw, by)
	}
}

// credentialHosts are the credentialed hosts of every profile of by, sorted.
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
// name (nil on a server without profiles). When a profile r's token may
// use injects credentials it has a CA of its own, which spec's sandbox
// trusts: sessionCAFile and the CA variables naming it (unless spec's env
// sets them) are added to spec. The CA may sign only the credentialed
// hosts of the profiles the token may use (the profiles its owner may
// switch it to), never another token's.
func (s *Server) sessionSwitch(r *http.Request, spec *sandbox.SessionSpec, name string) (*egress.Switch, uint64, error) {
	profiles, gen := s.profiles.getGen()
	if len(profiles) == 0 {
		if name != "" {
			return nil, gen, sandbox.Invalidf("egress profile %q: this server has no egress profiles (aster.yaml egress.profiles)", clipPath(name))
		}
		return nil, gen, nil
	}
	p, err := s.egressProfile(r, profiles, name)
	if err != nil {
		return nil, gen, err
	}
	sw, err := egress.NewCredentialSwitch(spec.ID, credentialHosts(s.usableProfiles(r, profiles)), s.mgr.SessionMaxTTL()+sessionCALifetime)
	if err != nil {
		return nil, gen, fmt.Errorf("%w: the session's certificate authority: %v", sandbox.ErrUnavailable, err)
	}
	if err := sw.Set(name, p); err != nil {
		sw.Close()
		return nil, gen, sandbox.Invalidf("egress profile %q: %v", name, err)
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
	return sw, gen, nil
}

// sessionWire is the session id's answer, with its egress profile.
func (s *Server) sessionWire(id string, i sandbox.SessionInfo) api.Session {
	return withProfile(sessionWire(i), s.sessionRelay(id))
}

// sessionRelay is the relay of the session id (nil: none, or no such
// session).
func (s *Server) sessionRelay(id string) *egress.Switch {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	if o := s.sessions.byID[id]; o != nil {
		return o.egress
	}
	return nil
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
	if !s.mayUseProfile(r, name) {
		return nil, fmt.Errorf("%w: this token may not use egress profile %q (the operator grants profiles with egress=%s after the token in the token file)", api.ErrForbidden, name, name)
	}
	return p, nil
}

// mayUseProfile says r's token may give a session the profile name: the
// token file grants it, or the server has no tokens.
func (s *Server) mayUseProfile(r *http.Request, name string) bool {
	if s.opts.Tokens == nil {
		return true
	}
	_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return slices.Contains(s.opts.Tokens.Profiles(strings.TrimSpace(tok)), name)
}

// usableProfiles are the profiles of by that r's token may use.
func (s *Server) usableProfiles(r *http.Request, by map[string]*egress.Policy) map[string]*egress.Policy {
	use := make(map[string]*egress.Policy, len(by))
	for name, p := range by {
		if s.mayUseProfile(r, name) {
			use[name] = p
		}
	}
	return use
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
	profiles, gen := s.profiles.getGen()
	p, err := s.egressProfile(r, profiles, req.Profile)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sw := s.sessionRelay(id)
	if sw == nil {
		if len(profiles) > 0 {
			s.writeError(w, r, fmt.Errorf("%w: this session was made while the server had no egress profiles, so it has no relay; make a new session", api.ErrNotFound))
			return
		}
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
	s.settle(id, sw, gen)
	s.log.Info("session egress profile", "session", id, "profile", req.Profile, "owner", s.owner(r))
	s.writeJSON(w, http.StatusOK, s.sessionWire(id, sess.Info()))
}
