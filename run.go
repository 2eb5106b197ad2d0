package agentadaptor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// RunHandle is a started run. Its methods are safe for concurrent use.
type RunHandle struct {
	runID  string
	queue  *payloadQueue
	cancel context.CancelCauseFunc
	done   chan struct{}
	result *RunResult
}

var (
	errCancelled = errors.New("run cancelled")
	errTimeout   = errors.New("run timed out")
)

// RunID returns the run's identifier, allocated before anything else happened.
func (h *RunHandle) RunID() string { return h.runID }

// StreamEvents returns the run's payloads in order: run.started first, exactly
// one terminal payload last, then the channel is closed. The same channel is
// returned on every call; payloads go to whichever reader takes them. Reading
// is optional; see the package doc for the backpressure policy.
func (h *RunHandle) StreamEvents() <-chan StreamPayload { return h.queue.out }

// Done is closed when the run has ended and its result is final.
func (h *RunHandle) Done() <-chan struct{} { return h.done }

// Wait blocks until the run has ended and returns its result. The error is
// non-nil only when ctx ended first; the run's own failure is in the result.
func (h *RunHandle) Wait(ctx context.Context) (*RunResult, error) {
	select {
	case <-h.done:
		return h.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Cancel stops the run: the child's process group gets SIGINT, then SIGKILL
// after the cancel grace period. Cancel waits until the run has ended or ctx
// ends, and returns ctx's error in the latter case. Cancelling an ended run is
// a no-op.
func (h *RunHandle) Cancel(ctx context.Context) error {
	h.cancel(errCancelled)
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the state the supervisor goroutine owns.
type run struct {
	sdk      *SDK
	cfg      runConfig
	h        *RunHandle
	adapter  Adapter
	prompt   string
	token    string
	tempDir  string
	services []RuntimeService
	refs     []RuntimeServiceRef
	mcp      []MCPServerSpec
	env      map[string]string
	secrets  map[string]bool
	inv      *Invocation
	cmd      *exec.Cmd
	stdout   *os.File
	stderr   *os.File
	stdin    *os.File      // write end of the child's stdin (conversations only)
	conv     *conversation // set when the adapter drives a Conversation
	result   *RunResult
	ctx      context.Context
	timeout  *time.Timer // the run's timeout, stopped when the run ends
}

// Start begins a run and returns once the child process has started. The
// run ends when the child exits, when ctx is cancelled (status cancelled), when
// Cancel is called, or when the run's timeout expires (status failed,
// FailureTimeout).
//
// Start fails with a *ConfigError for invalid options, ErrUnknownAdapter for
// an unregistered adapter, and a *StartError (carrying the RunID and a typed
// Failure) when runtime services, the adapter or the process could not start;
// in that case everything provisioned for the run has been released.
func (s *SDK) Start(ctx context.Context, prompt string, opts ...RunOption) (*RunHandle, error) {
	created := time.Now()
	cfg := defaultRunConfig()
	for _, o := range s.defaults {
		o(&cfg)
	}
	for _, o := range opts {
		o(&cfg)
	}
	name := cfg.adapter
	if name == "" {
		name = s.defaultAdapter
	}
	if name == "" {
		return nil, ErrNoAdapter
	}
	adapter, ok := s.adapters[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (registered: %v)", ErrUnknownAdapter, name, s.AdapterNames())
	}
	if cfg.timeout < 0 {
		return nil, &ConfigError{Field: "WithTimeout", Reason: "must not be negative"}
	}
	if err := checkNice(cfg.nice); err != nil {
		return nil, err
	}
	if err := checkEnvPatterns("WithEnvAllowList", cfg.envAllow); err != nil {
		return nil, err
	}
	if err := checkEnvPatterns("WithEnvDeny", cfg.envDeny); err != nil {
		return nil, err
	}
	mcp := append([]MCPServerSpec(nil), s.defaultMCP...)
	for _, m := range cfg.mcp {
		if err := m.Validate(); err != nil {
			return nil, err
		}
		mcp = replaceOrAppend(mcp, m)
	}
	for k := range cfg.env {
		if !envNamePattern().MatchString(k) {
			return nil, &ConfigError{Field: "WithEnv", Reason: fmt.Sprintf("%q is not a valid environment variable name", k)}
		}
	}
	if cfg.workDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, &ConfigError{Field: "WithWorkDir", Reason: "no work dir given and the current directory is unknown", Err: err}
		}
		cfg.workDir = wd
	} else if fi, err := os.Stat(cfg.workDir); err != nil || !fi.IsDir() {
		return nil, &ConfigError{Field: "WithWorkDir", Reason: fmt.Sprintf("%q is not a directory", cfg.workDir)}
	}

	runID := newID("run-", 12)
	r := &run{
		sdk: s, cfg: cfg, adapter: adapter, prompt: prompt, token: newToken(),
		mcp: mcp,
		result: &RunResult{
			RunID: runID, Adapter: name, SessionKey: cfg.sessionKey,
			Timings: Timings{Created: created},
		},
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	r.ctx = runCtx
	r.h = &RunHandle{
		runID:  runID,
		queue:  newPayloadQueue(runID, cfg.streamBuffer, cfg.hardCap, cfg.linger),
		cancel: cancel,
		done:   make(chan struct{}),
		result: r.result,
	}
	if f := r.setup(runCtx); f != nil {
		r.teardown()
		cancel(errCancelled)
		// The stream's dispatcher never started: nothing to stop.
		return nil, &StartError{RunID: runID, Failure: f}
	}
	if cfg.timeout > 0 {
		// Stopped by supervise when the run ends: no goroutine waits for it.
		r.timeout = time.AfterFunc(cfg.timeout, func() { cancel(errTimeout) })
	}
	if cfg.discard {
		r.h.queue.discardAll()
	} else {
		r.h.queue.start()
	}
	go r.supervise()
	return r.h, nil
}

// setup runs the fixed order RunID -> Ensure -> effective MCP -> Prepare ->
// process start. It returns a typed failure; the caller tears down.
func (r *run) setup(ctx context.Context) *Failure {
	makeTempDir := func() (string, error) {
		dir, err := os.MkdirTemp(r.cfg.tempRoot, "agentadaptor-"+r.h.runID+"-")
		if err == nil {
			r.tempDir = dir // removed by teardown
		}
		return dir, err
	}
	if _, onDemand := r.adapter.(TempDirOnDemand); !onDemand {
		if _, err := makeTempDir(); err != nil {
			return &Failure{Code: FailureStart, Message: "creating the run's temp dir: " + err.Error(), Err: err}
		}
	}
	vars := map[string]string{EnvRunID: r.h.runID}
	r.secrets = map[string]bool{EnvRunToken: true}
	env := map[string]string{EnvRunID: r.h.runID, EnvRunToken: r.token}

	req := RuntimeServiceRequest{
		RunID: r.h.runID, RunToken: r.token, SessionKey: r.cfg.sessionKey,
		Adapter: r.adapter.Name(), WorkDir: r.cfg.workDir, Model: r.cfg.model,
	}
	for i, m := range r.cfg.services {
		svc, err := m.Ensure(ctx, req)
		if err != nil {
			return &Failure{Code: FailureRuntimeService, Message: fmt.Sprintf("runtime service %d: %v", i, r.redact(err.Error())), Err: err}
		}
		if svc == nil {
			return &Failure{Code: FailureRuntimeService, Message: fmt.Sprintf("runtime service %d returned no service", i)}
		}
		r.services = append(r.services, svc)
		ref := svc.Ref()
		r.refs = append(r.refs, ref)
		if ref.URL != "" && ref.ID != "" {
			vars[ServiceURLVar(ref.ID)] = ref.URL
			env[ServiceURLVar(ref.ID)] = ref.URL
		}
		for k, v := range ref.Vars {
			vars[k] = v
			env[k] = v
		}
		for k, v := range ref.SecretEnv {
			if !envNamePattern().MatchString(k) {
				return &Failure{Code: FailureRuntimeService, Message: fmt.Sprintf("runtime service %q: SecretEnv name %q is not a valid variable name", ref.ID, k)}
			}
			r.secrets[k] = true
			env[k] = v
		}
	}
	maps.Copy(env, r.cfg.env)
	r.env = env

	// Effective MCP set: defaults and per-call servers, then injected ones.
	for _, ref := range r.refs {
		spec, ok, err := MCPServerFromRef(ref)
		if err != nil {
			return &Failure{Code: FailureInvalidConfig, Message: err.Error(), Err: err}
		}
		if !ok {
			continue
		}
		for _, m := range r.mcp {
			if m.Key == spec.Key {
				return &Failure{Code: FailureInvalidConfig, Message: fmt.Sprintf("runtime service %q injects MCP server %q, which the run already has", ref.ID, spec.Key)}
			}
		}
		r.mcp = append(r.mcp, spec)
	}
	for i, m := range r.mcp {
		x, err := ExpandMCPServer(m, vars, r.secrets)
		if err != nil {
			return &Failure{Code: FailureInvalidConfig, Message: err.Error(), Err: err}
		}
		r.mcp[i] = x
	}

	resume := ""
	if r.cfg.sessionKey != "" {
		id, ok, err := r.sdk.sessions.Load(ctx, r.adapter.Name(), r.cfg.sessionKey)
		if err != nil {
			return &Failure{Code: FailureStart, Message: "loading the session: " + err.Error(), Err: err}
		}
		if ok {
			resume = id
		}
	}
	r.cfg.resumeHint = resume
	areq := &AdapterRequest{
		RunID: r.h.runID, Prompt: r.prompt, Model: r.cfg.model, SessionKey: r.cfg.sessionKey,
		ResumeSessionID: resume, Streaming: r.cfg.streaming, WorkDir: r.cfg.workDir,
		TempDir: r.tempDir, MCPServers: r.mcp, Env: cloneMap(env), Secrets: cloneBoolMap(r.secrets),
		Options: cloneMap(r.cfg.adapterOpts), Timeout: r.cfg.timeout, makeTempDir: makeTempDir,
	}
	inv, err := r.adapter.Prepare(ctx, areq)
	if err != nil {
		code := FailureStart
		var ce *ConfigError
		if errors.As(err, &ce) {
			code = FailureInvalidConfig
		}
		return &Failure{Code: code, Message: r.redact(err.Error()), Err: err}
	}
	if inv == nil || (inv.Parser == nil) == (inv.Conversation == nil) || inv.Path == "" {
		return &Failure{Code: FailureInvalidConfig, Message: fmt.Sprintf("adapter %q prepared no command, or not exactly one of a parser and a conversation", r.adapter.Name())}
	}
	r.inv = inv
	if err := r.checkNoSecretInArgv(); err != nil {
		return &Failure{Code: FailureInvalidConfig, Message: err.Error()}
	}
	maps.Copy(env, inv.Env)
	r.result.MCPServers = append([]MCPServerSpec(nil), r.mcp...)
	return r.startProcess(ctx)
}

func (r *run) checkNoSecretInArgv() error {
	for name := range r.secrets {
		v := r.env[name]
		if v == "" {
			continue
		}
		if strings.Contains(r.inv.Path, v) {
			return fmt.Errorf("adapter %q put secret %s on the command line; refusing to start", r.adapter.Name(), name)
		}
		for _, a := range r.inv.Args {
			if strings.Contains(a, v) {
				return fmt.Errorf("adapter %q put secret %s on the command line; refusing to start", r.adapter.Name(), name)
			}
		}
	}
	return nil
}

func (r *run) startProcess(ctx context.Context) *Failure {
	if err := ctx.Err(); err != nil {
		return &Failure{Code: FailureCancelled, Message: "the run was cancelled before its process started", Err: err}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return &Failure{Code: FailureStart, Message: err.Error(), Err: err}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return &Failure{Code: FailureStart, Message: err.Error(), Err: err}
	}
	cmd := exec.Command(r.inv.Path, r.inv.Args...)
	cmd.Env = r.childEnv()
	cmd.Dir = r.inv.Dir
	if cmd.Dir == "" {
		cmd.Dir = r.cfg.workDir
	}
	cmd.Stdout = outW
	cmd.Stderr = errW
	// Stdin stays nil (/dev/null): an open pipe makes some CLIs wait for
	// input. A conversation's child gets a pipe: the run talks to it.
	var inR, inW *os.File
	if r.inv.Conversation != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return &Failure{Code: FailureStart, Message: err.Error(), Err: err}
		}
		cmd.Stdin = inR
	}
	err = startInGroup(cmd, r.cfg.nice)
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		return &Failure{Code: FailureStart, Message: fmt.Sprintf("starting %s: %v", r.inv.Path, err), Err: err}
	}
	r.stdin = inW
	cmd.Env = nil // the child has its environment: not kept for the run's life
	r.cmd, r.stdout, r.stderr = cmd, outR, errR
	r.result.Timings.Started = time.Now()
	r.emit(StreamPayload{Kind: KindRunStarted, Adapter: r.adapter.Name(), SessionID: r.cfg.resumeHint})
	return nil
}

// emit is the Emitter given to the parser.
func (r *run) emit(p StreamPayload) { r.h.queue.push(p) }

func (r *run) parserEmit(p StreamPayload) {
	switch p.Kind {
	case KindRunStarted, KindRunFinished, KindRunFailed, KindRunCancelled, KindStreamDropped:
		r.emit(StreamPayload{Kind: KindDiagnostic, Diagnostic: &Diagnostic{Code: DiagMalformedLine, Message: fmt.Sprintf("adapter emitted reserved kind %q; ignored", p.Kind)}})
		return
	}
	r.emit(p)
}

func (r *run) supervise() {
	var stdout, stderr capBuffer
	stdout.limit, stderr.limit = r.cfg.rawLimit, r.cfg.rawLimit
	stderr.tailCap = stderrTail
	pid := r.cmd.Process.Pid
	sig := &groupSignaller{pid: pid}
	if r.inv.Conversation != nil {
		// Created before the readers start: readStdout feeds it lines.
		r.conv = newConversation(r.inv.Conversation, sig, r.cfg.grace, r.stdin)
	}
	var wg sync.WaitGroup
	var outTaken, errTaken atomic.Int64 // bytes the readers have taken from each pipe
	wg.Add(2)
	go func() { defer wg.Done(); r.readStdout(&stdout, &outTaken) }()
	go func() { defer wg.Done(); readAll(r.stderr, &errTaken, &stderr) }()
	if r.conv != nil {
		r.conv.start(r.parserEmit)
	}

	// This goroutine waits for the child itself (waitExit: through the
	// netpoller where the OS allows, so no thread is blocked per child). A
	// cancellation is handled when it happens, by a function of the run's
	// context: RunCancelling, then SIGINT, and SIGKILL when the grace ends
	// (a conversation is first asked to stop its work; see conversation).
	// It is stopped, or waited for, and its kill timer stopped, before the
	// child is reaped, so that nothing signals a reused pid.
	cancelled := make(chan struct{})
	stopCancel := context.AfterFunc(r.ctx, func() {
		defer close(cancelled)
		for _, svc := range r.services {
			if o, ok := svc.(RunCancelObserver); ok {
				o.RunCancelling()
			}
		}
		if r.conv != nil {
			r.conv.interrupt()
			return
		}
		sig.interrupt(r.cfg.grace)
	})
	reaped := waitExit(r.cmd)
	if !stopCancel() {
		<-cancelled
	}
	if r.conv != nil {
		r.conv.childExited()
	}
	sig.exited()
	// The leader is gone; whatever it left in its group goes too.
	_ = signalGroup(pid, syscall.SIGKILL)
	if !reaped {
		_ = r.cmd.Wait() // returns at once: the child has exited
	}
	r.result.Timings.Exited = time.Now()

	// Drain stdout/stderr. Everything the child wrote is now either taken
	// by a reader or still in its pipe: mark where it ends before waiting.
	// A process that escaped the group could hold the pipes open, so the
	// wait for their end is bounded; past the bound our ends are closed,
	// but only once the readers have taken what the child left in them (a
	// host starved of CPU reads late, and loses no line of a child that
	// exited, its result line above all).
	outEnd, errEnd := pipeEnd(r.stdout, &outTaken), pipeEnd(r.stderr, &errTaken)
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	bound := time.NewTimer(pipeDrainBound)
	select {
	case <-drained:
		bound.Stop()
	case <-bound.C:
		waitTaken(drained, &outTaken, outEnd, &errTaken, errEnd)
		r.stdout.Close()
		r.stderr.Close()
		<-drained
	}
	r.stdout.Close()
	r.stderr.Close()

	st := exitStatus(r.cmd.ProcessState)
	st.Stderr = stderr.withTail()
	var outcome Outcome
	var convErr error
	convFirst := false
	if r.conv != nil {
		convErr = r.conv.wait()
		convFirst = r.conv.completedFirst()
		outcome = r.inv.Conversation.Finish(st, r.parserEmit)
	} else {
		outcome = r.inv.Parser.Finish(st, r.parserEmit)
	}

	res := r.result
	res.ExitCode = st.Code
	res.Output = outcome.Output
	res.SessionID = outcome.SessionID
	res.Usage = outcome.Usage
	res.RawStreams = RawStreams{
		Stdout: r.redactBytes(stdout.buf), StdoutTruncated: stdout.truncated,
		Stderr: r.redactBytes(stderr.buf), StderrTruncated: stderr.truncated,
	}
	cause := context.Cause(r.ctx)
	switch {
	case r.ctx.Err() != nil && errors.Is(cause, errTimeout):
		res.Status = StatusFailed
		res.Failure = &Failure{Code: FailureTimeout, Message: fmt.Sprintf("the run did not finish within %s", r.cfg.timeout), Retryable: true}
	case r.ctx.Err() != nil:
		res.Status = StatusCancelled
		res.Failure = &Failure{Code: FailureCancelled, Message: "the run was cancelled"}
	case outcome.Failure != nil:
		res.Status = StatusFailed
		f := *outcome.Failure
		f.Message = r.redact(f.Message)
		if f.ExitCode == 0 {
			f.ExitCode = st.Code
		}
		res.Failure = &f
	case st.Code != 0 && !convFirst:
		// A conversation that was over before the SDK ended the child is
		// not failed by how the child took that; one that was cut short is.
		res.Status = StatusFailed
		res.Failure = &Failure{Code: FailureExit, ExitCode: st.Code, Message: r.redact(exitMessage(st))}
	case convErr != nil:
		res.Status = StatusFailed
		res.Failure = &Failure{Code: FailureProtocol, ExitCode: st.Code, Message: r.redact(convErr.Error()), Err: convErr}
	default:
		res.Status = StatusCompleted
	}
	if res.SessionID != "" && r.cfg.sessionKey != "" && res.Status != StatusCancelled {
		if err := r.sdk.sessions.Save(context.WithoutCancel(r.ctx), r.adapter.Name(), r.cfg.sessionKey, res.SessionID); err != nil {
			r.sdk.logger.Warn("agentadaptor: saving session failed", "run_id", r.h.runID, "err", err)
		}
	}
	r.teardown()

	term := StreamPayload{Kind: KindRunFinished, SessionID: res.SessionID, Text: res.Output, Usage: res.Usage}
	switch res.Status {
	case StatusFailed:
		term = StreamPayload{Kind: KindRunFailed, SessionID: res.SessionID, Failure: res.Failure, Usage: res.Usage}
	case StatusCancelled:
		term = StreamPayload{Kind: KindRunCancelled, SessionID: res.SessionID, Failure: res.Failure, Usage: res.Usage}
	}
	r.emit(term)
	r.h.queue.end()
	if r.timeout != nil {
		r.timeout.Stop()
	}
	r.h.cancel(errCancelled) // release the run context's resources
	close(r.h.done)
}

// groupSignaller signals a cancelled child's process group: SIGINT at once,
// SIGKILL when the grace ends. After exited, it sends nothing more, and its
// kill timer has been stopped or has returned.
type groupSignaller struct {
	pid    int
	mu     sync.Mutex
	done   bool
	kill   *time.Timer
	killed chan struct{} // closed when the kill timer's function returned
}

func (g *groupSignaller) interrupt(grace time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done || g.kill != nil {
		return
	}
	_ = signalGroup(g.pid, syscall.SIGINT)
	g.killed = make(chan struct{})
	g.kill = time.AfterFunc(grace, func() {
		defer close(g.killed)
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.done {
			_ = signalGroup(g.pid, syscall.SIGKILL) // the grace is over
		}
	})
}

func (g *groupSignaller) exited() {
	g.mu.Lock()
	g.done = true
	kill := g.kill
	g.mu.Unlock()
	if kill != nil && !kill.Stop() {
		<-g.killed
	}
}

// teardown releases services, runs the adapter cleanup and removes the temp
// dir. It runs exactly once per run, on every path.
func (r *run) teardown() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.sdk.cfg.releaseTimeout)
	defer cancel()
	for i := len(r.services) - 1; i >= 0; i-- {
		if err := r.services[i].Release(ctx); err != nil {
			r.sdk.logger.Warn("agentadaptor: releasing runtime service failed", "run_id", r.h.runID, "service", r.refs[i].ID, "err", r.redact(err.Error()))
		}
	}
	for _, ref := range r.refs {
		r.result.RuntimeServices = append(r.result.RuntimeServices, ref.redacted())
	}
	if r.inv != nil && r.inv.Cleanup != nil {
		if err := r.inv.Cleanup(); err != nil {
			r.sdk.logger.Warn("agentadaptor: adapter cleanup failed", "run_id", r.h.runID, "err", err)
		}
	}
	if r.tempDir != "" {
		if err := os.RemoveAll(r.tempDir); err != nil {
			r.sdk.logger.Warn("agentadaptor: removing temp dir failed", "run_id", r.h.runID, "err", err)
		}
	}
	r.result.Timings.Ended = time.Now()
	t := &r.result.Timings
	if !t.Started.IsZero() {
		t.Setup = t.Started.Sub(t.Created)
		t.Process = t.Exited.Sub(t.Started)
		t.Teardown = t.Ended.Sub(t.Exited)
	}
}

func (r *run) redact(s string) string {
	for name := range r.secrets {
		if v := r.env[name]; len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[REDACTED]")
		}
	}
	return s
}

func (r *run) redactBytes(b []byte) []byte {
	for name := range r.secrets {
		if v := r.env[name]; len(v) >= 4 && bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte("[REDACTED]")) // a copy only when there is something to redact
		}
	}
	return b
}

// stderrTail is how much of the end of a child's stderr is kept beyond
// the raw stream limit, for ExitStatus.Stderr: a failing process writes
// its reason last.
const stderrTail = 4 << 10

func exitMessage(st ExitStatus) string {
	msg := fmt.Sprintf("process exited with code %d", st.Code)
	if st.Signaled {
		msg = "process was killed by a signal"
	}
	if tail := lastLine(st.Stderr, 300); tail != "" {
		msg += ": " + tail
	}
	return msg
}

func lastLine(b []byte, max int) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// pipeBuffers are the read buffers of every run's stdout and stderr. A
// reader takes one only once its pipe is readable, and puts it back after
// the read, so a run whose child is quiet holds no read buffer
// (docs/design.md#backpressure: bounded per-run memory). Longer lines are
// read in pieces.
var pipeBuffers = sync.Pool{New: func() any { b := make([]byte, pipeReadBuffer); return &b }}

const pipeReadBuffer = 8 << 10

// pipeDrainBound is how long a run waits, after its child exited, for
// the child's pipes to end before it closes them (a process that left the
// group may hold them open); pipeDrainPoll is how often, past the bound,
// it checks that the readers have taken what the child left in them.
var (
	pipeDrainBound = 2 * time.Second
	pipeDrainPoll  = 10 * time.Millisecond
)

// pipeEnd returns how many bytes a reader of f will have taken once it has
// read everything in the pipe now (taken counts what it took so far), or
// -1 where the system does not say what a pipe holds. It is called once
// the child has exited, so that what comes after that count is written by
// a process that outlived it.
func pipeEnd(f *os.File, taken *atomic.Int64) int64 {
	for range 100 {
		before := taken.Load()
		n := pipePending(f)
		if n < 0 {
			return -1
		}
		if taken.Load() == before {
			return before + int64(n)
		}
	}
	// The reader keeps taking what another process keeps writing: what
	// the child left was taken meanwhile.
	return taken.Load()
}

// waitTaken waits until drained is closed or each reader has taken its
// pipe's bytes up to its end (pipeEnd).
func waitTaken(drained <-chan struct{}, out *atomic.Int64, outEnd int64, errs *atomic.Int64, errEnd int64) {
	poll := time.NewTicker(pipeDrainPoll)
	defer poll.Stop()
	for !taken(out, outEnd) || !taken(errs, errEnd) {
		select {
		case <-drained:
			return
		case <-poll.C:
		}
	}
}

// taken reports whether the reader counted by n has taken the pipe's
// bytes up to end (-1: unknown, taken as done).
func taken(n *atomic.Int64, end int64) bool { return end < 0 || n.Load() >= end }

// readPipe reads f until EOF or an error and gives each piece read to
// fn, which must not keep it, after adding its length to taken. It waits
// for f to be readable through the netpoller without a buffer (f's raw
// conn), and takes a buffer from pipeBuffers only to read.
func readPipe(f *os.File, taken *atomic.Int64, fn func([]byte)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for {
		var bp *[]byte
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			bp = pipeBuffers.Get().(*[]byte)
			for {
				n, rerr = syscall.Read(int(fd), *bp)
				if rerr != syscall.EINTR {
					break
				}
			}
			if rerr == syscall.EAGAIN {
				pipeBuffers.Put(bp)
				bp = nil
				return false // wait until the pipe is readable
			}
			return true
		})
		if bp != nil {
			if n > 0 {
				taken.Add(int64(n))
				fn((*bp)[:n])
			}
			pipeBuffers.Put(bp)
		}
		if err != nil || rerr != nil || n <= 0 {
			return
		}
	}
}

// readAll keeps what r's child writes to f (its stderr).
func readAll(f *os.File, taken *atomic.Int64, into *capBuffer) { readPipe(f, taken, into.Write) }

// readStdout splits the child's stdout into lines, capping each, and feeds
// them to the parser. It is the only caller of ParseLine.
func (r *run) readStdout(raw *capBuffer, taken *atomic.Int64) {
	var line []byte
	lineNo, oversize := 0, 0
	flush := func() {
		lineNo++
		if oversize > 0 {
			excerpt := line
			if len(excerpt) > 200 {
				excerpt = excerpt[:200]
			}
			r.emit(StreamPayload{Kind: KindDiagnostic, Diagnostic: &Diagnostic{
				Code: DiagLineTooLong, Line: lineNo, Bytes: oversize,
				Message: fmt.Sprintf("stdout line %d is %d bytes, over the %d-byte limit; skipped", lineNo, oversize, r.cfg.lineLimit),
				Excerpt: r.redact(string(excerpt)),
			}})
		} else {
			l := bytes.TrimRight(line, "\r")
			if len(bytes.TrimSpace(l)) > 0 && r.conv != nil {
				r.conv.line(l)
			} else if len(bytes.TrimSpace(l)) > 0 {
				if err := r.inv.Parser.ParseLine(l, r.parserEmit); err != nil {
					excerpt := l
					if len(excerpt) > 200 {
						excerpt = excerpt[:200]
					}
					r.emit(StreamPayload{Kind: KindDiagnostic, Diagnostic: &Diagnostic{
						Code: DiagMalformedLine, Line: lineNo, Bytes: len(l),
						Message: r.redact(err.Error()), Excerpt: r.redact(string(excerpt)),
					}})
				}
			}
		}
		line = line[:0]
		oversize = 0
	}
	readPipe(r.stdout, taken, func(data []byte) {
		raw.Write(data)
		for len(data) > 0 {
			chunk, complete := data, false
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				chunk, data, complete = data[:i], data[i+1:], true
			} else {
				data = nil
			}
			if oversize > 0 {
				oversize += len(chunk)
			} else if len(line)+len(chunk) > r.cfg.lineLimit {
				oversize = len(line) + len(chunk)
				if len(line) < 200 {
					line = append(line, chunk[:min(len(chunk), 200)]...)
				}
			} else {
				line = append(line, chunk...)
			}
			if complete {
				flush()
			}
		}
	})
	if len(line) > 0 || oversize > 0 {
		flush()
	}
}

func cloneBoolMap(m map[string]bool) map[string]bool {
	c := make(map[string]bool, len(m))
	maps.Copy(c, m)
	return c
}
