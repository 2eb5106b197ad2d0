package host

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/httpguard"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

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

// newGuard builds the host's admission guard for its address, tokens and
// authenticator.
func newGuard(cfg Config, log *slog.Logger) (*httpguard.Guard, error) {
	if len(cfg.Tokens) == 0 && cfg.Authenticator == nil && !isLoopbackAddr(cfg.Addr) {
		return nil, fmt.Errorf("%w: %s is reachable from other machines; add auth.tokens to the config (bearer tokens by env:/file: reference; in Go, Config.Tokens or Config.Authenticator) or listen on 127.0.0.1", ErrInsecureAddr, cfg.Addr)
	}
	gc := httpguard.Config{Addr: cfg.Addr, AllowedHosts: cfg.AllowedHosts, TrustedOrigins: cfg.AllowedOrigins,
		Tokens: cfg.Tokens, Public: []string{"/healthz"}, SessionTTL: cfg.SessionTTL}
	if cfg.Authenticator != nil {
		gc.Authenticate = authenticate(cfg.Authenticator, log)
	}
	return httpguard.New(gc)
}

// authenticate adapts an Authenticator to the guard: its error is logged
// at debug level, never shown, and a principal that is not 1-256 bytes of
// printable UTF-8 without '/' is refused (it names the runs' namespace and
// the CLI sessions' keys, which must not collide).
func authenticate(a Authenticator, log *slog.Logger) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		p, err := a.Authenticate(r)
		if err != nil {
			log.Debug("agentadaptor: the authenticator refused a request", "path", r.URL.Path, "err", err)
			return "", err
		}
		if err := validPrincipal(p); err != nil {
			log.Error("agentadaptor: the authenticator returned an invalid principal; the request is refused", "err", err)
			return "", err
		}
		return p, nil
	}
}

// validPrincipal checks a principal an Authenticator returned.
func validPrincipal(p string) error {
	if p == "" || len(p) > 256 || !utf8.ValidString(p) {
		return errors.New("a principal must be 1-256 bytes of UTF-8")
	}
	for _, c := range p {
		if c == '/' || !unicode.IsPrint(c) {
			return fmt.Errorf("a principal must be printable, without '/' (got %q)", p)
		}
	}
	return nil
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
				h.ids.add(rh.RunID(), runID)
			}
			runStarted(r, rh)
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

// startupAgentError rewrites the delegator's startup failure as one line
// per agent checked at startup (fetch_card: startup), joined by "; ":
// which agent of the config, what is wrong in the operator's terms, and
// the detail (secrets already scrubbed). It is what serve prints; nothing
// else logs it.
func startupAgentError(err error, agents []registry.RemoteAgentSpec) error {
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
