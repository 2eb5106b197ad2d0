package agentadaptor

import (
	"fmt"
	"log/slog"
	"maps"
	"time"
)

// Defaults used when an option is not given.
const (
	DefaultStreamBuffer   = 4096             // queued payloads before droppable ones are dropped
	DefaultStreamHardCap  = 65536            // queued payloads before a consumer counts as gone
	DefaultRawStreamLimit = 1 << 20          // bytes of stdout and of stderr kept in RawStreams
	DefaultLineLimit      = 16 << 20         // bytes in one stdout line
	DefaultCancelGrace    = 3 * time.Second  // SIGINT -> SIGKILL
	DefaultStreamLinger   = 30 * time.Second // how long undelivered payloads wait after the run
	DefaultReleaseTimeout = 10 * time.Second // bound on releasing runtime services
)

// RunOption configures one run. Given to [New] through [WithRunDefaults] it
// becomes an SDK default; given to Start or Run it overrides that default.
type RunOption func(*runConfig)

type runConfig struct {
	adapter      string
	streaming    bool
	mcp          []MCPServerSpec
	services     []RuntimeServiceManager
	sessionKey   string
	workDir      string
	env          map[string]string
	envAllow     []string
	envDeny      []string
	isolateEnv   bool
	timeout      time.Duration
	model        string
	adapterOpts  map[string]string
	streamBuffer int
	hardCap      int
	rawLimit     int
	lineLimit    int
	grace        time.Duration
	linger       time.Duration
	tempRoot     string
	nice         int
	resumeHint   string // set by the SDK: the session being resumed, if any
	discard      bool   // set by Run: nobody reads the stream
}

func defaultRunConfig() runConfig {
	return runConfig{
		streamBuffer: DefaultStreamBuffer,
		hardCap:      DefaultStreamHardCap,
		rawLimit:     DefaultRawStreamLimit,
		lineLimit:    DefaultLineLimit,
		grace:        DefaultCancelGrace,
		linger:       DefaultStreamLinger,
	}
}

// WithAdapterName selects the registered adapter for the run.
func WithAdapterName(name string) RunOption { return func(c *runConfig) { c.adapter = name } }

// WithStreaming asks the adapter for partial output: text deltas as the model
// writes them, where the CLI offers that. Without it, text arrives as whole
// messages. Lifecycle and tool payloads are delivered either way.
func WithStreaming() RunOption { return func(c *runConfig) { c.streaming = true } }

// WithMCP adds MCP servers to the run. A server whose Key equals an SDK
// default's replaces that default for this run.
func WithMCP(specs ...MCPServerSpec) RunOption {
	return func(c *runConfig) {
		for _, s := range specs {
			c.mcp = replaceOrAppend(c.mcp, s.Clone())
		}
	}
}

// WithRuntimeServices adds runtime-service managers; each is ensured once per
// run, in order, and released when the run ends.
func WithRuntimeServices(managers ...RuntimeServiceManager) RunOption {
	return func(c *runConfig) { c.services = append(c.services, managers...) }
}

// WithSessionKey names the host-level conversation the run belongs to. Runs
// with the same key (and adapter) resume the same CLI session.
func WithSessionKey(key string) RunOption { return func(c *runConfig) { c.sessionKey = key } }

// WithWorkDir sets the child's working directory (default: the host's).
func WithWorkDir(dir string) RunOption { return func(c *runConfig) { c.workDir = dir } }

// WithEnv adds variables to the child's environment. They are not secret:
// use a RuntimeService's SecretEnv for secrets.
func WithEnv(env map[string]string) RunOption {
	return func(c *runConfig) {
		if c.env == nil {
			c.env = map[string]string{}
		}
		maps.Copy(c.env, env)
	}
}

// WithEnvAllowList isolates the child from the host environment: only the
// named host variables are passed, plus PATH, HOME and what the adapter
// declares it needs ([EnvNeeder]), plus the run's own variables (the run id
// and token, runtime-service variables, WithEnv, the adapter's
// Invocation.Env). A name may hold '*' for any run of characters
// ("ANTHROPIC_*"). By default the child inherits the whole host
// environment, so the user's own CLI configuration and credentials apply.
// [WithEnvDeny] wins over the allow list. Each use adds to the list.
func WithEnvAllowList(names ...string) RunOption {
	return func(c *runConfig) { c.isolateEnv = true; c.envAllow = append(c.envAllow, names...) }
}

// WithEnvDeny keeps the named host variables from the child, and so from
// everything it spawns, whether the child inherits the whole host
// environment or only an allow list ([WithEnvAllowList]): a denied name is
// never inherited. Use it for the host's own secrets, which the agent CLI,
// running commands as it does, could otherwise read from its environment:
// the variables the host's auth references name, credential-carrying
// variables such as OTEL_EXPORTER_OTLP_HEADERS (docs/design.md#secrets).
//
// A name may hold '*' for any run of characters
// ("OTEL_EXPORTER_OTLP_*HEADERS"). Only inherited variables are removed:
// the run's own additions (the run id and token, runtime-service variables,
// WithEnv, the adapter's Invocation.Env) are always passed. Each use adds
// to the list, so a run's own options can extend the SDK defaults' deny
// list (WithRunDefaults) but never shorten it. An entry that is not a
// variable name is a *ConfigError (from Start; from New when given through
// WithRunDefaults).
func WithEnvDeny(names ...string) RunOption {
	return func(c *runConfig) { c.envDeny = append(c.envDeny, names...) }
}

// WithTimeout bounds the run; when it expires the run is stopped and fails
// with FailureTimeout. Zero means no timeout.
func WithTimeout(d time.Duration) RunOption { return func(c *runConfig) { c.timeout = d } }

// WithModel selects the model, in the CLI's own naming.
func WithModel(model string) RunOption { return func(c *runConfig) { c.model = model } }

// WithAdapterOption sets an adapter-specific per-run setting; each adapter
// documents the keys it reads.
func WithAdapterOption(key, value string) RunOption {
	return func(c *runConfig) {
		if c.adapterOpts == nil {
			c.adapterOpts = map[string]string{}
		}
		c.adapterOpts[key] = value
	}
}

// WithStreamBuffer sets how many payloads may wait for a slow consumer before
// droppable payloads are dropped (default DefaultStreamBuffer).
func WithStreamBuffer(n int) RunOption { return func(c *runConfig) { c.streamBuffer = n } }

// WithStreamHardCap sets how many payloads may wait in all before the
// consumer is considered gone and only the terminal payload is kept
// (default DefaultStreamHardCap).
func WithStreamHardCap(n int) RunOption { return func(c *runConfig) { c.hardCap = n } }

// WithStreamLinger sets how long payloads not yet read are kept after the run
// ends before the stream channel is closed without them.
func WithStreamLinger(d time.Duration) RunOption { return func(c *runConfig) { c.linger = d } }

// WithRawStreamLimit caps the bytes of stdout and of stderr kept in
// RunResult.RawStreams (default DefaultRawStreamLimit).
func WithRawStreamLimit(n int) RunOption { return func(c *runConfig) { c.rawLimit = n } }

// WithLineLimit caps one stdout line; longer lines are skipped with a
// DiagLineTooLong diagnostic (default DefaultLineLimit).
func WithLineLimit(n int) RunOption { return func(c *runConfig) { c.lineLimit = n } }

// WithCancelGrace sets how long a cancelled child has after SIGINT before its
// process group is killed (default DefaultCancelGrace).
func WithCancelGrace(d time.Duration) RunOption { return func(c *runConfig) { c.grace = d } }

// WithTempRoot sets the directory under which per-run temp dirs are created
// (default os.TempDir()).
func WithTempRoot(dir string) RunOption { return func(c *runConfig) { c.tempRoot = dir } }

// MaxNice is the largest nice value [WithNice] accepts: the lowest CPU
// priority.
const MaxNice = 19

// WithNice runs the child CLI, and every process and thread it spawns, at
// the lower CPU priority of Unix nice value n, from 0 (the default: the
// priority is left as inherited from the host) to MaxNice (the lowest).
//
// Use it when the host serves something that must stay responsive while
// agent CLIs compete with it for CPU, such as the relay of remote agents'
// streams to a browser: under contention the children get less CPU time,
// so their own work, their text stream included, slows down. When the
// machine has CPU to spare it changes nothing. The scheduler weighs each
// runnable thread by its nice value, so many children together still
// outweigh the host unless n is high: on Linux 100 busy children at 19
// weigh about as much as one and a half threads at 0, at 10 as much as
// eleven.
//
// On Linux the child is started from a short-lived host thread whose nice
// value is n: it inherits n at its creation, and everything it creates
// inherits it in turn, from the first instruction on; the host's other
// threads keep their priority. Elsewhere (macOS, the BSDs) n is applied
// with setpriority(PRIO_PGRP) to the child's process group just after the
// child starts. The value is absolute: a host that itself runs at a higher
// nice value than n passes its own on instead, unless it is privileged
// (CAP_SYS_NICE), in which case the child gets exactly n. Only lowering
// priority is offered: a negative n, which would need privilege, is a
// *ConfigError, as is n above MaxNice (from Start; from New when given
// through WithRunDefaults). If the priority cannot be set, Start fails with a
// *StartError (FailureStart) and no child is left running.
func WithNice(n int) RunOption { return func(c *runConfig) { c.nice = n } }

func checkNice(n int) error {
	switch {
	case n < 0:
		return &ConfigError{Field: "WithNice", Reason: fmt.Sprintf("%d is negative: raising a child's priority above the host's needs privilege (CAP_SYS_NICE), which is not offered; use 0..%d", n, MaxNice)}
	case n > MaxNice:
		return &ConfigError{Field: "WithNice", Reason: fmt.Sprintf("%d is above %d, the lowest priority", n, MaxNice)}
	}
	return nil
}

// SDKOption configures an SDK at construction.
type SDKOption func(*sdkConfig)

type sdkConfig struct {
	adapters       []Adapter
	defaultAdapter string
	defaultMCP     []MCPServerSpec
	defaults       []RunOption
	sessions       SessionStore
	logger         *slog.Logger
	releaseTimeout time.Duration
}

// WithAdapters registers adapters. The first registered becomes the default
// unless WithDefaultAdapter says otherwise.
func WithAdapters(adapters ...Adapter) SDKOption {
	return func(c *sdkConfig) { c.adapters = append(c.adapters, adapters...) }
}

// WithDefaultAdapter names the adapter used when a run does not select one.
func WithDefaultAdapter(name string) SDKOption { return func(c *sdkConfig) { c.defaultAdapter = name } }

// WithDefaultMCP sets MCP servers every run gets unless a run replaces one by
// Key through WithMCP.
func WithDefaultMCP(specs ...MCPServerSpec) SDKOption {
	return func(c *sdkConfig) {
		for _, s := range specs {
			c.defaultMCP = replaceOrAppend(c.defaultMCP, s.Clone())
		}
	}
}

// WithRunDefaults sets run options applied to every run before its own.
func WithRunDefaults(opts ...RunOption) SDKOption {
	return func(c *sdkConfig) { c.defaults = append(c.defaults, opts...) }
}

// WithSessionStore replaces the in-memory session store.
func WithSessionStore(s SessionStore) SDKOption { return func(c *sdkConfig) { c.sessions = s } }

// WithLogger sets the SDK's logger (default: slog.Default()). Secrets are never logged.
func WithLogger(l *slog.Logger) SDKOption { return func(c *sdkConfig) { c.logger = l } }

// WithReleaseTimeout bounds how long releasing a run's runtime services may take.
func WithReleaseTimeout(d time.Duration) SDKOption {
	return func(c *sdkConfig) { c.releaseTimeout = d }
}

func replaceOrAppend(list []MCPServerSpec, s MCPServerSpec) []MCPServerSpec {
	for i := range list {
		if list[i].Key == s.Key {
			list[i] = s
			return list
		}
	}
	return append(list, s)
}
