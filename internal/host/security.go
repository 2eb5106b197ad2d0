package host

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/httpguard"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/credentials"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// ErrInsecureAddr is returned by New for a non-loopback listen address
// without auth tokens: anyone who reaches the port could run the local
// agent, which edits files and runs commands.
var ErrInsecureAddr = errors.New("refusing to serve a non-loopback address without authentication")

// isLoopbackAddr reports whether addr's host is a loopback name or address.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// resolveTokens reads the principals' tokens from their auth references.
func resolveTokens(tokens []hostconfig.Token) (map[string]string, error) {
	out := map[string]string{}
	for i, t := range tokens {
		c, err := credentials.Resolve(t.TokenRef)
		if err != nil {
			return nil, fmt.Errorf("auth.tokens[%d] (%s): %w", i, t.Name, err)
		}
		out[t.Name] = credentials.Secret(c)
	}
	return out, nil
}

// newGuard builds the host's admission guard for the listen address.
func newGuard(cfg *hostconfig.Config, addr string) (*httpguard.Guard, error) {
	tokens, err := resolveTokens(cfg.Auth.Tokens)
	if err != nil {
		return nil, err
	}
	if len(tokens) == 0 && !isLoopbackAddr(addr) {
		return nil, fmt.Errorf("%w: %s is reachable from other machines; add auth.tokens to the config (bearer tokens by env:/file: reference) or listen on 127.0.0.1", ErrInsecureAddr, addr)
	}
	return httpguard.New(httpguard.Config{Addr: addr, AllowedHosts: cfg.Auth.AllowedHosts, TrustedOrigins: cfg.AllowedOrigins,
		Tokens: tokens, Public: []string{"/healthz"}, SessionTTL: time.Duration(cfg.Auth.SessionTTL)})
}

// principal is the principal a request acts for ("" without auth).
func principal(r *http.Request) string { return httpguard.Principal(r.Context()) }

// sessionKey scopes a chat thread to its principal: two principals using
// the same threadId never share a CLI session.
func sessionKey(r *http.Request, threadID string) string {
	p := principal(r)
	if p == "" || threadID == "" {
		return threadID
	}
	return p + "/" + threadID
}

// runHook wraps the telemetry's run hook: a started run is remembered with
// the principal whose request started it (owners).
func (h *Host) runHook(next sse.RunHook) sse.RunHook {
	return func(r *http.Request) ([]agentadaptor.RunOption, func(string, *agentadaptor.RunHandle, error)) {
		opts, started := next(r)
		p := principal(r)
		return opts, func(runID string, rh *agentadaptor.RunHandle, err error) {
			if started != nil {
				started(runID, rh, err)
			}
			if err == nil && rh != nil {
				h.owners.add(sse.RunKey(p, runID), p, rh.RunID())
			}
		}
	}
}

// owners remembers which principal started each run (by run key: the
// AG-UI runId in its principal's namespace, sse.RunKey) and
// the run's SDK id, longer than the run lives: its audit records and
// artifacts stay readable, by that principal only. Bounded by count and age.
type owners struct {
	mu    sync.Mutex
	m     map[string]ownerEntry
	max   int
	maxAg time.Duration
}

type ownerEntry struct {
	principal string
	sdkRunID  string
	at        time.Time
}

func newOwners() *owners {
	return &owners{m: map[string]ownerEntry{}, max: 100000, maxAg: 24 * time.Hour}
}

func (o *owners) add(key, principal, sdkRunID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if len(o.m) >= o.max {
		// Drop the expired ones, then the oldest tenth.
		var all []string
		for id, e := range o.m {
			if now.Sub(e.at) > o.maxAg {
				delete(o.m, id)
			} else {
				all = append(all, id)
			}
		}
		if len(o.m) >= o.max {
			sort.Slice(all, func(i, j int) bool { return o.m[all[i]].at.Before(o.m[all[j]].at) })
			for _, id := range all[:len(all)/10+1] {
				delete(o.m, id)
			}
		}
	}
	o.m[key] = ownerEntry{principal: principal, sdkRunID: sdkRunID, at: now}
}

func (o *owners) get(key string) (ownerEntry, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.m[key]
	if !ok || time.Since(e.at) > o.maxAg {
		return ownerEntry{}, false
	}
	return e, true
}

// LoginURLs returns a one-time login link per principal, for the operator
// to open (base is the host's URL, e.g. "http://127.0.0.1:8080"); none
// without auth tokens.
func (h *Host) LoginURLs(base string) map[string]string {
	out := map[string]string{}
	for _, t := range h.cfg.Auth.Tokens {
		if u := h.guard.LoginURL(base, t.Name); u != "" {
			out[t.Name] = u
		}
	}
	return out
}

// startupAgentError rewrites the delegator's startup failure as one line
// per agent checked at startup (fetch_card: startup), joined by "; ":
// which agent of the config, what is wrong in the operator's terms, and
// the detail (secrets already scrubbed). It is what serve prints; nothing
// else logs it.
func startupAgentError(err error, agents []hostconfig.Agent) error {
	var list []error
	if j, ok := errors.Unwrap(err).(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var parts []string
	for _, e := range list {
		var se *registry.StartupError
		if !errors.As(e, &se) || se.Err == nil {
			parts = append(parts, e.Error())
			continue
		}
		where := fmt.Sprintf("agent %q", se.Key)
		for i, a := range agents {
			if a.Key == se.Key {
				where = fmt.Sprintf("agents[%d] (%s)", i, se.Key)
			}
		}
		var what string
		switch {
		case errors.Is(se.Err, remote.ErrConfig):
			what = "is misconfigured"
		case se.Err.Failure != nil && se.Err.Failure.Code == delegation.CodeAuthRequired:
			what = "refused the host's credentials (check its auth_ref or auth)"
		default:
			what = "could not be reached"
		}
		detail := ""
		if se.Err.Cause != nil {
			detail = ": " + strings.TrimPrefix(se.Err.Cause.Error(), remote.ErrConfig.Error()+": ")
		}
		parts = append(parts, fmt.Sprintf("%s, checked at startup (fetch_card: startup), %s%s", where, what, detail))
	}
	return &StartupError{msg: strings.ReplaceAll(strings.Join(parts, "; "), "\n", " "), err: err}
}

// StartupError is New's error when an agent checked at startup
// (fetch_card: startup) fails: one line naming each agent and why.
type StartupError struct {
	msg string
	err error
}

func (e *StartupError) Error() string { return e.msg }
func (e *StartupError) Unwrap() error { return e.err }
