package a2adelegation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
)

// Remote AG-UI execution (Protocol "agui"). The delegation machinery is the
// A2A one (registry, policy clamp, concurrency slots, host timeout, the
// parent/run/service cancellation causes, stopped/finish/result, audit,
// artifact store, input answers); only the wire differs: one
// pkg/clients/agui run per turn, mapped by [aguiMapper]. See doc.go for the
// mapping table.

// aguiClient returns the agent's AG-UI client, creating it on first use.
func (r *Registry) aguiClient(e *agentEntry) (*aguiclient.Client, *DelegationError) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, &DelegationError{Code: CodeAgentUnavailable, Retryable: true, Message: "the delegation service is shutting down"}
	}
	if e.agui != nil {
		return e.agui, nil
	}
	s := e.spec
	// A frame must be able to hold an artifact the policy accepts.
	frame := min(max(aguiclient.DefaultMaxFrameBytes, int(s.Policy.MaxArtifactBytes)+64<<10), 64<<20)
	c, err := aguiclient.New(aguiclient.Options{EndpointURL: s.EndpointURL, AuthRef: s.AuthRef, HTTPClient: r.opts.HTTPClient,
		ConnectTimeout: r.opts.RequestTimeout, MaxFrameBytes: frame})
	if err != nil {
		if errors.Is(err, aguiclient.ErrInvalidAuthRef) {
			return nil, &DelegationError{Code: CodeAgentUnavailable, Message: fmt.Sprintf("the host credential for agent %q is not configured (%s)", s.Key, s.AuthRef)}
		}
		return nil, &DelegationError{Code: CodeAgentUnavailable, Message: fmt.Sprintf("agent %q is misconfigured: %s", s.Key, r.red.str(shortText(err.Error(), 300)))}
	}
	r.red.add(secretOfAuthRef(s.AuthRef))
	e.agui = c
	return c, nil
}

// aguiRun is one delegation to a remote AG-UI agent.
type aguiRun struct {
	d       *delegation
	client  *aguiclient.Client
	ag      *aguiMapper
	history []types.Message
	seen    int // messages of d.m already in history
}

// runAGUI drives the delegation to its terminal event. ctx carries the
// host timeout and the cancellation causes.
func (d *delegation) runAGUI(ctx context.Context) {
	d.mode = "streaming" // AG-UI runs always stream; there is nothing to poll
	d.configureMapper(true)
	r := &aguiRun{d: d, ag: newAGUIMapper(d.m)}
	r.ag.red = d.s.reg.red
	// The thread is the remote context: ours to choose, sticky per policy.
	d.m.contextID = d.s.stickyContext(d.req, d.spec)
	if d.m.contextID == "" {
		d.m.contextID = newAGUIID("thread-")
	}
	text := d.taskText()
	r.history = []types.Message{{ID: newAGUIID("msg-"), Role: types.RoleUser, Content: text}}
	in := aguiclient.Input{ThreadID: d.m.contextID, RunID: newAGUIID("run-"), Messages: r.history, Context: d.aguiContext(),
		ForwardedProps: map[string]any{"agentadaptor": map[string]any{"delegation_id": d.id}}}
	d.m.taskID = in.RunID

	client, derr := d.s.reg.aguiClient(d.entry)
	if derr != nil {
		r.emit(r.ag.ensureStarted())
		d.finish(DelegationFailed, derr)
		return
	}
	r.client = client
	for {
		err := r.stream(ctx, in)
		if d.m.terminal != "" {
			return
		}
		r.emit(r.ag.ensureStarted())
		if ctx.Err() != nil {
			d.stopped(ctx)
			return
		}
		if !r.ag.paused {
			r.fail(err)
			return
		}
		answer, ok := r.awaitInput(ctx)
		if !ok {
			return
		}
		r.appendHistory(answer)
		in.RunID, in.Messages = newAGUIID("run-"), r.history
		r.ag.newRun(in.RunID)
	}
}

// stream runs one turn and maps its events until the terminal, a pause
// for input, or the end of the stream (whose error it returns).
func (r *aguiRun) stream(ctx context.Context, in aguiclient.Input) error {
	st, err := r.client.Run(ctx, in)
	if err != nil {
		return err
	}
	defer st.Close() // aborts the request if the run is still going
	for st.Next() {
		r.emit(r.ag.Map(st.Event()))
		if r.d.m.terminal != "" || r.ag.paused {
			return nil
		}
	}
	if err := st.Err(); err != nil {
		return err
	}
	return &aguiclient.Error{Kind: aguiclient.KindInterrupted, Op: "stream", Err: fmt.Errorf("the run ended without a usable terminal event")}
}

// emit publishes mapped events; the started event becomes the audited
// started event of the delegation.
func (r *aguiRun) emit(evs []DelegationEvent) {
	for _, ev := range evs {
		ev.Raw = redactRaw(r.d.s.reg.red, ev.Raw)
		if ev.Kind == DelegationStarted {
			r.d.beginRaw(ev.Raw)
			continue
		}
		r.d.publish(ev)
	}
}

// fail finishes the delegation for a client error (no terminal event came).
func (r *aguiRun) fail(err error) {
	d := r.d
	if err == nil {
		err = &aguiclient.Error{Kind: aguiclient.KindInterrupted, Op: "stream"}
	}
	d.s.logWarn("delegation failed", d, err)
	d.finish(DelegationFailed, aguiFailure(err, RemoteStatusLabel(d.m.state)))
}

// aguiFailure maps a pkg/clients/agui error to a SPEC §16 failure. The
// message is generic: remote URLs and payloads stay in the host log.
func aguiFailure(err error, remoteStatus string) *DelegationError {
	e := &DelegationError{RemoteStatus: remoteStatus}
	switch aguiclient.KindOf(err) {
	case aguiclient.KindUnavailable:
		e.Code, e.Retryable, e.Message = CodeAgentUnavailable, true, "The remote agent could not be reached."
	case aguiclient.KindUnauthorized:
		e.Code, e.Message = CodeAgentUnavailable, "The remote agent refused the host's credentials."
	case aguiclient.KindNotFound:
		e.Code, e.Message = CodeAgentUnavailable, "There is no AG-UI endpoint at the configured URL."
	case aguiclient.KindRejected:
		e.Code, e.Message = CodeRemoteRejected, "The remote agent rejected the request."
	case aguiclient.KindTimeout:
		e.Code, e.Retryable, e.Message = CodeRemoteTimeout, true, "The remote agent stopped sending data before the run finished."
	case aguiclient.KindInterrupted:
		e.Code, e.Retryable, e.Message = CodeStreamInterrupted, true, "The remote stream ended before the run finished; AG-UI runs cannot be resumed."
	case aguiclient.KindProtocol:
		e.Code, e.Message = CodeRemoteFailed, "The remote agent sent a malformed or oversized payload."
	default:
		e.Code, e.Message = CodeRemoteFailed, "The delegation failed."
	}
	return e
}

// awaitInput handles a run that paused for input, as the A2A path handles
// input-required: refused by policy, answered through AnswerInput, or
// ended by the timeout or a cancellation. There is no remote run to
// cancel: the paused run already finished.
func (r *aguiRun) awaitInput(ctx context.Context) (string, bool) {
	d := r.d
	question := r.ag.question
	label := RemoteStatusLabel(d.m.state)
	if !d.spec.Policy.AllowInputRequired {
		d.finish(DelegationFailed, &DelegationError{Code: CodeInputRequiredUnsupported, RemoteStatus: label,
			Message: "The remote agent asked for input, which host policy does not allow" + suffix(question)})
		return "", false
	}
	d.s.awaitInput(d)
	var answer string
	select {
	case answer = <-d.input:
	case <-ctx.Done():
	}
	d.s.setWaiting(d, false)
	if ctx.Err() != nil {
		if context.Cause(ctx) == errHostTimeout {
			d.finish(DelegationFailed, &DelegationError{Code: CodeInputRequired, RemoteStatus: label,
				Message: "The remote agent needs input that was not provided before the timeout" + suffix(question)})
			return "", false
		}
		d.stopped(ctx)
		return "", false
	}
	d.publish(DelegationEvent{Kind: DelegationStatus, Status: "input_provided", Text: "Input sent to the remote agent."})
	return answer, true
}

// appendHistory adds the paused run's assistant messages and the answer:
// the follow-up run carries the conversation, as AG-UI clients do.
func (r *aguiRun) appendHistory(answer string) {
	m := r.d.m
	for _, id := range m.textOrder[r.seen:] {
		if t := m.texts[id].text; t != "" {
			r.history = append(r.history, types.Message{ID: id, Role: types.RoleAssistant, Content: t})
		}
	}
	r.seen = len(m.textOrder)
	r.history = append(r.history, types.Message{ID: newAGUIID("msg-"), Role: types.RoleUser, Content: answer})
}

// aguiContext passes the input artifacts as AG-UI context entries: the
// content of this run's text host artifacts within the policy size, a
// reference otherwise (the host never fetches other URIs).
func (d *delegation) aguiContext() []types.Context {
	out := []types.Context{}
	for _, a := range d.req.Input.Artifacts {
		name := sanitizeText(a.Name, 200)
		if del, aid, ok := ParseArtifactURI(a.URI); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := d.s.artifacts.Get(ctx, d.req.RunID, del, aid)
			cancel()
			if err == nil && int64(len(st.Content)) <= d.spec.Policy.MaxArtifactBytes &&
				(strings.HasPrefix(st.MimeType, "text/") || st.MimeType == "application/json") {
				out = append(out, types.Context{Description: "artifact " + cmpOrStr(name, st.Name) + " (" + st.MimeType + ")", Value: string(st.Content)})
				continue
			}
		}
		out = append(out, types.Context{Description: "artifact reference " + name, Value: a.URI})
	}
	return out
}

// redactRaw removes known secrets from a Raw payload (remote AG-UI payloads
// are preserved there, so a remote echoing the credential must not leak it).
func redactRaw(red *redactor, raw map[string]any) map[string]any {
	if raw == nil {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return map[string]any{"unencodable": true}
	}
	if s := red.str(string(b)); s != string(b) {
		var out map[string]any
		if json.Unmarshal([]byte(s), &out) == nil {
			return out
		}
		return map[string]any{"redacted": true}
	}
	return raw
}

func newAGUIID(prefix string) string {
	return prefix + strings.TrimPrefix(newDelegationID(), "del-")
}
