package agentadaptor

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Metadata keys a [RuntimeServiceRef] uses to inject an MCP server into the
// run: Option A of the run-scoped MCP context
// (docs/design.md#run-scoped-mcp-context). A ref whose Metadata has MetaMCPEnabled = "true" is
// turned into an [MCPServerSpec] and appended to the run's effective MCP set
// before the adapter materializes its profile.
const (
	MetaMCPEnabled     = "agentadaptor.mcp.enabled"      // "true" to inject
	MetaMCPTransport   = "agentadaptor.mcp.transport"    // "http" (the default; the only one a runtime service can inject)
	MetaMCPKey         = "agentadaptor.mcp.key"          // server key; default: ref.Name, else ref.ID
	MetaMCPAuth        = "agentadaptor.mcp.auth"         // "bearer" or "none" (default "none")
	MetaMCPTokenEnv    = "agentadaptor.mcp.token_env"    // env var holding the bearer token; default AGENT_ADAPTOR_RUN_TOKEN
	MetaMCPRequired    = "agentadaptor.mcp.required"     // "true" if a connect failure fails the run
	MetaMCPToolTimeout = "agentadaptor.mcp.tool_timeout" // Go duration, e.g. "10m"
)

// Variables every run provides. AGENT_ADAPTOR_RUN_ID is a plain variable;
// AGENT_ADAPTOR_RUN_TOKEN is a secret that only the child's environment holds.
const (
	EnvRunID    = "AGENT_ADAPTOR_RUN_ID"
	EnvRunToken = "AGENT_ADAPTOR_RUN_TOKEN"
)

// RuntimeServiceRequest is what a [RuntimeServiceManager] learns about the run
// it provisions for. RunToken is the run's secret bearer token: a service that
// gates access per run (such as the delegation MCP server) accepts it for the
// life of the run and must revoke it on Release.
type RuntimeServiceRequest struct {
	RunID      string
	RunToken   string
	SessionKey string
	Adapter    string
	WorkDir    string
	Model      string
}

// RuntimeServiceRef describes a provisioned service to the run.
//
// URL is exposed to MCP specs as ${AGENT_ADAPTOR_SERVICE_<ID>_URL} (ID upper-cased,
// other characters than letters and digits replaced by '_'). Vars are further
// plain variables for ${VAR} expansion and the child's environment. SecretEnv
// entries go only into the child's environment; they are never expanded into
// files or argv and are stripped from [RunResult.RuntimeServices].
type RuntimeServiceRef struct {
	ID        string            `json:"id"`
	Name      string            `json:"name,omitempty"`
	URL       string            `json:"url,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Vars      map[string]string `json:"vars,omitempty"`
	SecretEnv map[string]string `json:"-"`
}

// RuntimeService is one service provisioned for one run.
type RuntimeService interface {
	// Ref describes the service to the run.
	Ref() RuntimeServiceRef
	// Release tears the service down. The SDK calls it exactly once per
	// ensured service, whatever the run's outcome, with a context bounded by
	// the SDK's release timeout.
	Release(ctx context.Context) error
}

// RunCancelObserver is an optional interface of a [RuntimeService]: the SDK
// calls RunCancelling as soon as its run is cancelled or times out, before it
// signals the child and waits for it, so the service can start cascading the
// cancellation (for example to remote tasks) without waiting for a CLI that
// is slow to exit. It must not block; Release still follows.
type RunCancelObserver interface {
	RunCancelling()
}

// RuntimeServiceManager provisions a per-run service. Ensure is called after the
// RunID is allocated and before the effective MCP set is computed; an error
// fails the run's start with FailureRuntimeService.
type RuntimeServiceManager interface {
	Ensure(ctx context.Context, req RuntimeServiceRequest) (RuntimeService, error)
}

// ServiceURLVar returns the name of the plain variable that holds the URL of
// the runtime service with the given ID.
func ServiceURLVar(id string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(id) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return "AGENT_ADAPTOR_SERVICE_" + b.String() + "_URL"
}

// MCPServerFromRef converts a ref carrying MetaMCPEnabled = "true" into an
// MCPServerSpec (Option A). It reports ok = false when the ref injects nothing.
func MCPServerFromRef(ref RuntimeServiceRef) (spec MCPServerSpec, ok bool, err error) {
	md := ref.Metadata
	if md[MetaMCPEnabled] != "true" {
		return MCPServerSpec{}, false, nil
	}
	field := func(k string) string { return fmt.Sprintf("RuntimeServiceRef[%s].Metadata[%s]", ref.ID, k) }
	switch t := md[MetaMCPTransport]; t {
	case "", "http":
	default:
		return MCPServerSpec{}, false, &ConfigError{Field: field(MetaMCPTransport), Reason: fmt.Sprintf("%q: a runtime service can only inject an http MCP server", t)}
	}
	spec = MCPServerSpec{Key: md[MetaMCPKey], Transport: MCPTransportHTTP, URL: ref.URL, Required: md[MetaMCPRequired] == "true"}
	if spec.Key == "" {
		spec.Key = ref.Name
	}
	if spec.Key == "" {
		spec.Key = ref.ID
	}
	switch a := md[MetaMCPAuth]; a {
	case "", "none":
	case "bearer":
		spec.BearerTokenEnvVar = md[MetaMCPTokenEnv]
		if spec.BearerTokenEnvVar == "" {
			spec.BearerTokenEnvVar = EnvRunToken
		} else if _, ok := ref.SecretEnv[spec.BearerTokenEnvVar]; !ok {
			return MCPServerSpec{}, false, &ConfigError{Field: field(MetaMCPTokenEnv), Reason: fmt.Sprintf("%q is not one of the ref's SecretEnv variables", spec.BearerTokenEnvVar)}
		}
	default:
		return MCPServerSpec{}, false, &ConfigError{Field: field(MetaMCPAuth), Reason: fmt.Sprintf("%q is not bearer or none", a)}
	}
	if v := md[MetaMCPToolTimeout]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return MCPServerSpec{}, false, &ConfigError{Field: field(MetaMCPToolTimeout), Reason: fmt.Sprintf("%q is not a duration", v)}
		}
		spec.ToolTimeout = d
	}
	if err := spec.Validate(); err != nil {
		return MCPServerSpec{}, false, err
	}
	return spec, true, nil
}

// redacted returns a copy of ref without secret values, for RunResult.
func (ref RuntimeServiceRef) redacted() RuntimeServiceRef {
	r := ref
	r.SecretEnv = nil
	r.Metadata = cloneMap(ref.Metadata)
	r.Vars = cloneMap(ref.Vars)
	return r
}
