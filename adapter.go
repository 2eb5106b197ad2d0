package agentadaptor

import (
	"context"
	"errors"
	"time"
)

// Adapter is how a concrete agent CLI plugs into the SDK. An adapter is
// stateless across runs: everything a run needs arrives in the
// [AdapterRequest], and everything the run leaves behind lives in its TempDir
// or is undone by the Invocation's Cleanup.
type Adapter interface {
	// Name is the registry name ("claude", "codex", "cursor", "scripted").
	Name() string
	// Prepare builds the command line and per-run profile for one run. It may
	// write files under req.TempDir (removed by the SDK after the run). It must
	// not put any value of req.Env whose name is in req.Secrets on the command
	// line or into a file; it refers to secrets by variable name instead.
	// An error fails the run's start; return a *ConfigError for bad settings.
	Prepare(ctx context.Context, req *AdapterRequest) (*Invocation, error)
}

// AdapterRequest is everything an adapter learns about one run.
type AdapterRequest struct {
	RunID      string
	Prompt     string
	Model      string
	SessionKey string
	// ResumeSessionID is the CLI session id an earlier run of this adapter
	// reported for SessionKey, or "" for a new session.
	ResumeSessionID string
	// Streaming asks the CLI for partial output (text deltas), when it has it.
	Streaming bool
	WorkDir   string
	// TempDir is private to the run (mode 0700) and removed after it. An
	// adapter that implements [TempDirOnDemand] gets "" here and calls
	// MakeTempDir when it needs the directory.
	TempDir string
	// MCPServers is the effective, validated and expanded MCP set (SDK
	// defaults, per-call servers, runtime-injected servers, in that order).
	MCPServers []MCPServerSpec
	// Env is what the SDK adds to the child's environment: run variables,
	// runtime-service variables and secrets, and WithEnv entries.
	Env map[string]string
	// Secrets names the entries of Env that are secret.
	Secrets map[string]bool
	// Options holds adapter-specific per-run settings (WithAdapterOption).
	Options map[string]string
	// Timeout is the run's timeout, 0 for none.
	Timeout time.Duration

	makeTempDir func() (string, error)
}

// TempDirOnDemand is implemented by adapters that need the run's temp dir
// only sometimes. The SDK then does not create it up front: Prepare gets an
// empty TempDir and calls [AdapterRequest.MakeTempDir] when it writes a
// file. A run that never asks costs no directory (docs/design.md#order-of-a-run).
type TempDirOnDemand interface {
	TempDirOnDemand()
}

// MakeTempDir returns the run's temp dir (private, mode 0700, removed after
// the run), creating it on the first call: TempDir, when the SDK created it
// up front.
func (r *AdapterRequest) MakeTempDir() (string, error) {
	if r.TempDir == "" && r.makeTempDir != nil {
		dir, err := r.makeTempDir()
		if err != nil {
			return "", err
		}
		r.TempDir = dir
	}
	if r.TempDir == "" {
		return "", errors.New("agentadaptor: the run has no temp dir")
	}
	return r.TempDir, nil
}

// Invocation is the prepared child process of a run.
type Invocation struct {
	Path string
	Args []string
	// Env is added to the child's environment after the SDK's own additions.
	Env map[string]string
	// Dir is the working directory; default the request's WorkDir.
	Dir string
	// Parser turns the child's stdout into payloads. Exactly one of Parser
	// and Conversation is set.
	Parser Parser
	// Conversation, instead of Parser, drives a child that the run talks to
	// over its stdin and stdout while it runs (docs/design.md#conversations).
	// The child then gets a pipe as stdin instead of /dev/null.
	Conversation Conversation
	// Cleanup, if set, runs once after the process has exited (and before
	// TempDir is removed), whatever the outcome.
	Cleanup func() error
}

// Emitter delivers one payload of the run. The SDK fills RunID, Seq and Time;
// payloads of the run.* kinds are reserved to the SDK.
type Emitter func(StreamPayload)

// Parser translates one run's stdout. The SDK calls ParseLine for every line in
// order from a single goroutine, then Finish exactly once.
type Parser interface {
	// ParseLine handles one stdout line without its line terminator. An error
	// becomes a DiagMalformedLine diagnostic payload and the run goes on.
	ParseLine(line []byte, emit Emitter) error
	// Finish is called after the process exited and stdout was drained. It
	// reports the run's final output, session id, usage and, if the agent
	// reported one, a failure.
	Finish(exit ExitStatus, emit Emitter) Outcome
}

// ExitStatus describes how the child process ended.
type ExitStatus struct {
	Code     int    // exit code, -1 if killed by a signal
	Signaled bool   // the process was ended by a signal
	Stderr   []byte // the captured stderr: past the raw stream limit, its start, "\n[…]\n" and its last 4 KiB
}

// Outcome is what a Parser reports at the end of a run.
type Outcome struct {
	Output    string
	SessionID string
	Usage     *Usage
	// Failure, if set, fails the run with this typed reason even when the
	// process exited zero.
	Failure *Failure
}
