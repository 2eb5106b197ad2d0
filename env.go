package agentadaptor

import (
	"fmt"
	"maps"
	"os"
	"path"
	"strings"
)

// EnvNeeder is implemented by adapters whose CLI needs host environment
// variables to work at all: its configuration directory, its API key, its
// base URL. Under [WithEnvAllowList] the variables NeededEnv names are
// passed besides the allow list; [WithEnvDeny] still removes them (a
// denied name is never passed). Names may hold '*' as in WithEnvDeny.
type EnvNeeder interface {
	NeededEnv() []string
}

// alwaysAllowed are the host variables a child gets under
// [WithEnvAllowList] without being listed: every CLI needs to find programs
// and its user's home.
var alwaysAllowed = []string{"PATH", "HOME"}

// envPatternSyntax is what an entry of WithEnvAllowList or WithEnvDeny may
// be: a variable name, '*' standing for any run of characters.
var envPatternSyntax = lazyRegexp(`^[A-Za-z0-9_*]+$`)

// checkEnvPatterns validates the entries of an env option.
func checkEnvPatterns(field string, patterns []string) error {
	for _, p := range patterns {
		if !envPatternSyntax().MatchString(p) {
			return &ConfigError{Field: field, Reason: fmt.Sprintf("%q is not a variable name (letters, digits, '_', and '*' for any run of characters)", p)}
		}
	}
	return nil
}

// matchEnv reports whether name matches one of patterns.
func matchEnv(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name {
			return true
		}
		if strings.Contains(p, "*") {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
	}
	return false
}

// childEnv is the child's environment: the host's (all of it, or only the
// allow list plus what every CLI and the adapter need), less the denied
// names, plus the run's own variables, which nothing removes.
func (r *run) childEnv() []string {
	var allow []string
	if r.cfg.isolateEnv {
		allow = append(append([]string(nil), alwaysAllowed...), r.cfg.envAllow...)
		if n, ok := r.adapter.(EnvNeeder); ok {
			allow = append(allow, n.NeededEnv()...)
		}
	}
	m := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || (r.cfg.isolateEnv && !matchEnv(allow, k)) || matchEnv(r.cfg.envDeny, k) {
			continue
		}
		m[k] = v
	}
	maps.Copy(m, r.env)
	return sortedEnv(m)
}
