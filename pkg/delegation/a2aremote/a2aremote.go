package a2aremote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	sdka2a "github.com/a2aproject/a2a-go/v2/a2a"

	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"

	"github.com/seed0634/agentadaptor/pkg/credentials"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// Options tune how A2A agents are reached. The zero value gives the
// defaults.
type Options struct {
	// HTTPClient supplies the base transport for card fetches and calls
	// (nil: a private transport per agent, released by Agent.Close).
	HTTPClient *http.Client
	// CardFetchTimeout bounds one card fetch (0: the client's default).
	CardFetchTimeout time.Duration
	// RequestTimeout bounds unary calls (0: the client's default).
	RequestTimeout time.Duration
	// PollInterval and MaxPollInterval pace GetTask polling of agents that
	// do not stream (defaults 250ms and 2s; the interval grows 1.5x).
	PollInterval, MaxPollInterval time.Duration
	// RecoverAttempts and RecoverBackoff tune the recovery of a cut stream
	// (resubscribe, then get) and of failed polls (defaults 5 and 200ms).
	RecoverAttempts int
	RecoverBackoff  time.Duration
	// CreateGrace bounds how long a request that creates a remote task may
	// outlive a cancellation, so that its response can name the task to
	// cancel (default 5s).
	CreateGrace time.Duration
}

func (o *Options) defaults() {
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	if o.MaxPollInterval < o.PollInterval {
		o.MaxPollInterval = max(2*time.Second, o.PollInterval)
	}
	if o.RecoverAttempts <= 0 {
		o.RecoverAttempts = 5
	}
	if o.RecoverBackoff <= 0 {
		o.RecoverBackoff = 200 * time.Millisecond
	}
	if o.CreateGrace <= 0 {
		o.CreateGrace = 5 * time.Second
	}
}

// Connector is the remote.Connector for A2A agents.
type Connector struct {
	opts Options
}

// New returns a Connector for A2A agents.
func New(opts Options) *Connector {
	opts.defaults()
	return &Connector{opts: opts}
}

// Protocol implements remote.Connector.
func (c *Connector) Protocol() string { return delegation.ProtocolA2A }

// Connect implements remote.Connector: it resolves the credential, fetches
// and checks the agent card (or builds one for an endpoint-only agent) and
// returns the agent. A malformed card or an unresolvable credential wraps
// remote.ErrConfig.
func (c *Connector) Connect(ctx context.Context, ep remote.Endpoint) (remote.Agent, error) {
	opts := a2aclient.Options{HTTPClient: c.opts.HTTPClient, CardFetchTimeout: c.opts.CardFetchTimeout, RequestTimeout: c.opts.RequestTimeout,
		InterfaceOrigins: ep.InterfaceOrigins,
		// An event must hold an artifact the policy accepts, JSON-escaped.
		MaxEventBytes: max(a2aclient.DefaultMaxEventBytes, 2*ep.MaxArtifactBytes+64<<10),
		Auth:          ep.Auth, Secrets: ep.Secrets}
	if ep.Auth == nil {
		cred, err := credentials.Resolve(ep.AuthRef)
		if err != nil {
			return nil, fmt.Errorf("%w: the host credential for agent %q is not configured (%s)", remote.ErrConfig, ep.Key, ep.AuthRef)
		}
		opts.Credential = cred
	}
	var client *a2aclient.Client
	var err error
	if ep.CardURL != "" {
		client, err = a2aclient.NewClient(ctx, ep.CardURL, opts)
	} else {
		var card *a2aclient.Card
		if card, err = syntheticCard(ep); err == nil {
			client, err = a2aclient.NewClientFromCard(ctx, card, opts)
		}
	}
	if err != nil {
		var se *a2aclient.SchemeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%w: agent %q cannot use the configured auth: %w", remote.ErrConfig, ep.Key, err)
		case errors.Is(err, credentials.ErrInvalidRef):
			return nil, fmt.Errorf("%w: the host credential for agent %q is not configured: %w", remote.ErrConfig, ep.Key, err)
		case clienterr.KindOf(err) == clienterr.KindProtocol:
			return nil, fmt.Errorf("%w: agent %q has a malformed agent card: %w", remote.ErrConfig, ep.Key, err)
		case clienterr.KindOf(err) == 0:
			// Not a client error: the auth configuration itself (no
			// network was involved).
			return nil, fmt.Errorf("%w: agent %q: %w", remote.ErrConfig, ep.Key, err)
		}
		return nil, err
	}
	if ep.MaxReadBytes <= 0 {
		ep.MaxReadBytes = DefaultMaxReadBytes
	}
	info := infoFromCard(client.Card())
	info.AuthScheme = string(client.AuthScheme())
	info.DeclaredAuth = a2aclient.DeclaredSchemes(client.Card())
	return &agent{c: c, ep: ep, client: client, info: info}, nil
}

// syntheticCard builds the card of an A2A agent configured by endpoint only.
func syntheticCard(ep remote.Endpoint) (*a2aclient.Card, error) {
	doc := map[string]any{
		"name": ep.Key, "version": "0", "description": "",
		"supportedInterfaces": []any{map[string]any{"url": ep.URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"capabilities":        map[string]any{"streaming": ep.Streaming},
		"defaultInputModes":   []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"},
	}
	raw, _ := json.Marshal(doc)
	return a2aclient.ParseCard(raw, ep.URL)
}

// infoFromCard reads a card conservatively: only a literal
// capabilities.streaming=true enables streaming; output modes and skill ids
// that do not look like media types or identifiers are dropped. It never
// copies free text (names, descriptions) from the card.
func infoFromCard(c *a2aclient.Card) remote.Info {
	var info remote.Info
	if c == nil || c.Agent == nil {
		return info
	}
	info.Fingerprint = c.Fingerprint
	info.Streaming = c.Agent.Capabilities.Streaming
	for _, m := range c.Agent.DefaultOutputModes {
		if sanitize.MediaTypePattern().MatchString(m) && len(info.OutputModes) < 16 {
			info.OutputModes = append(info.OutputModes, m)
		}
	}
	for _, sk := range c.Agent.Skills {
		if sanitize.IDPattern().MatchString(sk.ID) && len(info.SkillIDs) < 32 && !slices.Contains(info.SkillIDs, sk.ID) {
			info.SkillIDs = append(info.SkillIDs, sk.ID)
		}
	}
	return info
}

// agent is one connected A2A agent.
type agent struct {
	c      *Connector
	ep     remote.Endpoint
	client *a2aclient.Client
	info   remote.Info
}

func (a *agent) Info() remote.Info { return a.info }

// CheckCredentials implements remote.CredentialChecker. When the card
// declares a security scheme, it asks for a task that cannot exist
// (tasks/get, GetTask in A2A 1.0: every A2A agent serves it, it is
// authenticated like every call but the card, and it changes nothing): an
// agent that accepts the credential answers TaskNotFound, one that refuses
// it 401/403 or an A2A unauthenticated/unauthorized error. Only that
// refusal is an error; anything else (the agent is down, answers oddly)
// is left to the first delegation. A card that declares no scheme is not
// checked. (A2A's authenticated extended card would prove the credential
// too, but only agents that declare it serve it.)
func (a *agent) CheckCredentials(ctx context.Context) error {
	if len(a.info.DeclaredAuth) == 0 {
		return nil
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	_, err := a.client.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: a2aclient.TaskID("agentadaptor-credential-check-" + hex.EncodeToString(b)), Tenant: a.ep.Tenant})
	if clienterr.KindOf(err) == clienterr.KindUnauthorized {
		return err
	}
	return nil
}
func (a *agent) Close() error { return a.client.Close() }

func (a *agent) NewTask(spec remote.TaskSpec) remote.Task {
	mode := "polling"
	if a.info.Streaming && spec.Stream {
		mode = "streaming"
	}
	if spec.Log == nil {
		spec.Log = slog.New(slog.DiscardHandler)
	}
	m := newMapper(spec.Transcript, mode == "streaming")
	// A polled task's terminal state comes from GetTask itself; a stream's
	// may come before the task's artifacts, and is then read back once.
	m.readBack = mode == "streaming"
	return &task{a: a, spec: spec, mode: mode, m: m, budget: a2aclient.NewReadBudget(a.ep.MaxReadBytes)}
}

// task is one delegated A2A task.
type task struct {
	a    *agent
	spec remote.TaskSpec
	mode string
	m    *mapper
	sent bool // a request that creates the remote task went out
	// budget bounds what all the task's calls read from the agent.
	budget *a2aclient.ReadBudget
}

func (t *task) Mode() string      { return t.mode }
func (t *task) ContextID() string { return t.m.contextID }

func (t *task) emit(evs []delegation.DelegationEvent) {
	if len(evs) > 0 {
		t.spec.Emit(evs...)
	}
}

func (t *task) metadata() map[string]any {
	return map[string]any{"agentadaptor/delegation_id": t.spec.DelegationID}
}

// DefaultMaxReadBytes bounds what one delegation reads from an agent when
// the endpoint does not say.
const DefaultMaxReadBytes = 64 << 20

// Start implements remote.Task: it announces the delegation, then sends the
// task with message/stream (or, for an agent that does not stream, with a
// non-blocking send followed by polling).
func (t *task) Start(ctx context.Context) error {
	ctx = a2aclient.WithReadBudget(ctx, t.budget)
	t.emit([]delegation.DelegationEvent{{Kind: delegation.DelegationStarted, Status: "starting"}})
	if !t.a.info.Streaming {
		t.emit([]delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: "polling",
			Text: "The remote agent does not stream; following its task state by polling.",
			Raw:  map[string]any{"reason": string(delegation.CodeCapabilityUnsupported)}}})
	}
	return t.send(ctx, t.buildMessage())
}

// Answer implements remote.Task. Until the remote reports a state reached
// after the answer, a snapshot restating the interrupted state (a
// follow-up stream begins with the Task) ends nothing
// (docs/design.md#event-mapping).
func (t *task) Answer(ctx context.Context, text string) error {
	ctx = a2aclient.WithReadBudget(ctx, t.budget)
	t.m.beginFollowUp()
	msg := sdka2a.NewMessageForTask(sdka2a.MessageRoleUser, sdka2a.TaskInfo{TaskID: sdka2a.TaskID(t.m.taskID), ContextID: t.m.contextID}, sdka2a.NewTextPart(text))
	return t.send(ctx, msg)
}

func (t *task) send(ctx context.Context, msg *sdka2a.Message) error {
	if t.mode == "streaming" {
		return t.stream(ctx, msg)
	}
	return t.poll(ctx, msg)
}

// buildMessage composes the A2A message of the delegated task: the text,
// host artifacts with their content, and other artifacts as references.
func (t *task) buildMessage() *sdka2a.Message {
	parts := []*sdka2a.Part{sdka2a.NewTextPart(t.spec.Text)}
	var refs []map[string]string
	for _, a := range t.spec.Artifacts {
		if a.Content == nil {
			refs = append(refs, map[string]string{"name": a.Name, "uri": a.URI})
			continue
		}
		var p *sdka2a.Part
		if strings.HasPrefix(a.MimeType, "text/") || a.MimeType == "application/json" {
			p = sdka2a.NewTextPart(string(a.Content))
		} else {
			p = sdka2a.NewRawPart(a.Content)
		}
		p.Filename, p.MediaType = a.Name, a.MimeType
		parts = append(parts, p)
	}
	if len(refs) > 0 {
		p := sdka2a.NewDataPart(map[string]any{"artifact_refs": refs})
		p.MediaType = "application/json"
		parts = append(parts, p)
	}
	msg := sdka2a.NewMessage(sdka2a.MessageRoleUser, parts...)
	msg.ContextID = t.spec.ContextID
	return msg
}

// untilTaskKnown returns the context for a request that creates a remote
// task. A cancellation of ctx while that request is in flight must not cut
// it before the response names the task, or the remote task would run on
// with nobody to cancel it: the returned context ends when ctx does, but
// only once first has been called (the task id is known, or the request
// failed) or after Options.CreateGrace. done releases everything.
func (t *task) untilTaskKnown(ctx context.Context) (rctx context.Context, first, done func()) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	known := make(chan struct{})
	var once sync.Once
	first = func() { once.Do(func() { close(known) }) }
	stop := context.AfterFunc(ctx, func() {
		timer := time.NewTimer(t.a.c.opts.CreateGrace)
		defer timer.Stop()
		select {
		case <-known:
		case <-timer.C:
		}
		cancel()
	})
	return rctx, first, func() { first(); stop(); cancel() }
}

// stream sends msg with message/stream and maps the stream. It returns nil
// when the task reached a terminal or interrupted state (or ctx ended), and
// otherwise the error that cut the stream.
func (t *task) stream(ctx context.Context, msg *sdka2a.Message) error {
	rctx, first, done := t.untilTaskKnown(ctx)
	defer done()
	t.sent = true
	var st *a2aclient.Stream
	err := t.whileBusy(rctx, func() (err error) {
		st, err = t.a.client.SendStreaming(rctx, a2aclient.SendRequest{Message: msg, Tenant: t.a.ep.Tenant, Metadata: t.metadata()},
			a2aclient.StreamOptions{FollowUpOf: t.m.followUpOf()})
		return err
	})
	if err != nil {
		first()
		return err
	}
	if st.Next() {
		t.emit(t.m.Map(st.Event()))
	}
	first()
	for st.Next() {
		t.emit(t.m.Map(st.Event()))
	}
	err = st.Err()
	_ = st.Close()
	return t.settle(ctx, err, "stream")
}

// whileBusy makes one send of an answer (send), and sends it again, after
// a backoff (RecoverBackoff, doubling), while the remote refuses it as busy
// (refusedForNow), at most RecoverAttempts more times. An a2a-go server
// answers an answer that arrives while the turn that asked the question is
// still winding down with "task execution is already in progress": the
// question is out, the remote is not yet ready for its answer. A first
// message is sent once.
func (t *task) whileBusy(ctx context.Context, send func() error) error {
	backoff := t.a.c.opts.RecoverBackoff
	for attempt := 0; ; attempt++ {
		err := send()
		if err == nil || !t.m.awaiting || !refusedForNow(err) || attempt >= t.a.c.opts.RecoverAttempts {
			return err
		}
		t.spec.Log.Info("the remote refused the answer as busy; sending it again", "attempt", attempt+1,
			"error", t.spec.Transcript.Redact(sanitize.Truncate(err.Error(), 300)))
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		backoff = min(2*backoff, t.a.c.opts.MaxPollInterval)
	}
}

// refusedForNow reports whether err is the remote's own answer that it
// cannot take the message now: a JSON-RPC error response it classes as a
// server error (HTTP 200), or HTTP 429 or 503. The remote read the message
// and refused it, so sending it again cannot deliver it twice; a transport
// failure, where the message may have arrived, is not.
func refusedForNow(err error) bool {
	var e *clienterr.Error
	return errors.As(err, &e) && e.Kind == clienterr.KindUnavailable &&
		(e.Status == http.StatusOK || e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable)
}

// settle turns the end of a stream into Task's contract: nil once the task
// is terminal or interrupted (or ctx ended), else the cut as an error. After
// an answer, only a state reached after the send counts.
func (t *task) settle(ctx context.Context, err error, op string) error {
	t.resolveHeld(ctx)
	state := t.spec.Transcript.State()
	if t.spec.Transcript.Terminal() != "" || ctx.Err() != nil {
		return nil
	}
	if err == nil && !t.m.awaiting && (state.Interrupted() || state.Terminal()) {
		return nil
	}
	if err == nil {
		why := "stream ended before a terminal state"
		if t.m.awaiting {
			why = "stream ended before the remote reported a state after the answer"
		}
		err = a2aclient.NewError(clienterr.KindInterrupted, op, errors.New(why))
	}
	return err
}

// resolveHeld reads the task once when the mapper holds a terminal state
// reached without output (docs/design.md#event-mapping): a peer that sends
// its terminal frame early delivers its artifacts to GetTask only. The
// held state then ends the delegation, with whatever the read added.
func (t *task) resolveHeld(ctx context.Context) {
	held := t.m.takeHeld()
	if held == nil {
		return
	}
	var got *a2aclient.Task
	if ctx.Err() == nil {
		zero := 0
		g, err := t.a.client.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: sdka2a.TaskID(t.m.taskID), Tenant: t.a.ep.Tenant, HistoryLength: &zero})
		if err == nil {
			got = g
		} else {
			t.spec.Log.Warn("reading back a task that ended without output failed", "error", t.spec.Transcript.Redact(sanitize.Truncate(err.Error(), 300)))
		}
	}
	t.emit(t.m.readBackTask(*held, got))
}

// CanRecover implements remote.Task: a cut or unreachable stream of a task
// whose id is known can be re-attached to.
func (t *task) CanRecover(err error) bool {
	k := clienterr.KindOf(err)
	return t.m.taskID != "" && (k == clienterr.KindInterrupted || k == clienterr.KindUnavailable)
}

// Recover implements remote.Task: resubscribe, or poll the task, with
// retries (pkg/clients/a2a.RecoverTask).
func (t *task) Recover(ctx context.Context) error {
	ctx = a2aclient.WithReadBudget(ctx, t.budget)
	t.m.resetStatus()
	rep, err := a2aclient.RecoverTask(ctx, t.a.client, sdka2a.TaskID(t.m.taskID), a2aclient.RecoverOptions{
		Tenant: t.a.ep.Tenant, MaxAttempts: t.a.c.opts.RecoverAttempts, InitialBackoff: t.a.c.opts.RecoverBackoff,
		OnEvent: func(ev a2aclient.Event) { t.emit(t.m.Map(ev)) },
	})
	if rep != nil && rep.Task != nil {
		t.emit(t.m.Map(rep.Task))
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, a2aclient.ErrResponseTooLarge) {
			return err // the read budget is spent: remote_failed, as without a cut
		}
		return a2aclient.NewError(clienterr.KindInterrupted, "recover", err)
	}
	return t.settle(ctx, nil, "recover")
}

// poll is the non-streaming path: send with returnImmediately, then poll
// the task with backoff. Only status events are published (no invented
// text deltas).
func (t *task) poll(ctx context.Context, msg *sdka2a.Message) error {
	rctx, first, done := t.untilTaskKnown(ctx)
	t.sent = true
	var res *a2aclient.SendResult
	err := t.whileBusy(rctx, func() (err error) {
		res, err = t.a.client.Send(rctx, a2aclient.SendRequest{Message: msg, Tenant: t.a.ep.Tenant, ReturnImmediately: true, Metadata: t.metadata()})
		return err
	})
	first()
	done()
	if err != nil {
		return err
	}
	if res.Message != nil {
		t.emit(t.m.Map(res.Message))
		return t.settle(ctx, nil, "poll")
	}
	t.emit(t.m.Map(res.Task))
	interval := t.a.c.opts.PollInterval
	failures, zero := 0, 0
	tr := t.spec.Transcript
	for tr.Terminal() == "" && (t.m.awaiting || !tr.State().Interrupted()) {
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		interval = min(interval*3/2, t.a.c.opts.MaxPollInterval)
		got, err := t.a.client.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: sdka2a.TaskID(t.m.taskID), Tenant: t.a.ep.Tenant, HistoryLength: &zero})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var e *clienterr.Error
			if errors.As(err, &e) && e.Retryable() && failures < t.a.c.opts.RecoverAttempts {
				failures++
				continue
			}
			return a2aclient.NewError(clienterr.KindInterrupted, "poll", err)
		}
		failures = 0
		t.emit(t.m.Map(got))
	}
	return nil
}

// Cancel implements remote.Task: one CancelTask with the metadata; when the
// remote refuses or does not know the task, a GetTask tells whether it has
// simply ended already.
func (t *task) Cancel(ctx context.Context, meta map[string]any) remote.CancelOutcome {
	if t.m.taskID == "" {
		if t.sent {
			return remote.CancelUnaddressable
		}
		return remote.CancelNotNeeded
	}
	if t.spec.Transcript.State().Terminal() {
		return remote.CancelConfirmed
	}
	out, err := t.a.cancelTask(ctx, sdka2a.TaskID(t.m.taskID), meta)
	t.logCancel(meta, err)
	return out
}

// RetryCancel implements remote.CancelRetrier: GetTask first, and
// CancelTask again only when the remote shows the task still running. It
// runs on a cleanup watcher's goroutine after the task's own has ended,
// so it reads only what was fixed before (the task id), never the
// transcript.
func (t *task) RetryCancel(ctx context.Context, meta map[string]any) remote.CancelOutcome {
	if t.m.taskID == "" {
		if t.sent {
			return remote.CancelUnaddressable
		}
		return remote.CancelNotNeeded
	}
	out, err := t.a.retryCancelTask(ctx, sdka2a.TaskID(t.m.taskID), meta)
	t.logCancel(meta, err)
	return out
}

// logCancel logs a cancellation call that failed (nil: nothing to log).
func (t *task) logCancel(meta map[string]any, err error) {
	if err != nil {
		t.spec.Log.Warn("remote cancel not confirmed", "reason", meta["reason"], "error", t.spec.Transcript.Redact(sanitize.Truncate(err.Error(), 300)))
	}
}
