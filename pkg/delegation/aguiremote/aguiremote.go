package aguiremote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"

	"github.com/seed0634/agentadaptor/pkg/credentials"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// Options tune how remote AG-UI agents are reached. The zero value gives
// the defaults.
type Options struct {
	// HTTPClient supplies the base transport (nil: a private transport per
	// agent, released by Agent.Close).
	HTTPClient *http.Client
	// ConnectTimeout bounds the wait for the response headers of a run
	// (0: the client's default).
	ConnectTimeout time.Duration
}

// DefaultMaxReadBytes bounds one run's response when the endpoint does not
// say.
const DefaultMaxReadBytes = 64 << 20

// Connector is the remote.Connector for remote AG-UI agents.
type Connector struct {
	opts Options
}

// New returns a Connector for remote AG-UI agents.
func New(opts Options) *Connector { return &Connector{opts: opts} }

// Protocol implements remote.Connector.
func (c *Connector) Protocol() string { return delegation.ProtocolAGUI }

// Connect implements remote.Connector. AG-UI has no self-description: it
// only checks the endpoint and the credential; nothing is sent.
func (c *Connector) Connect(_ context.Context, ep remote.Endpoint) (remote.Agent, error) {
	// A frame must be able to hold an artifact the policy accepts.
	frame := min(max(aguiclient.DefaultMaxFrameBytes, int(ep.MaxArtifactBytes)+64<<10), 64<<20)
	limit := ep.MaxReadBytes
	if limit <= 0 {
		limit = DefaultMaxReadBytes
	}
	client, err := aguiclient.New(aguiclient.Options{EndpointURL: ep.URL, AuthRef: ep.AuthRef, HTTPClient: c.opts.HTTPClient,
		ConnectTimeout: c.opts.ConnectTimeout, MaxFrameBytes: frame, MaxStreamBytes: limit})
	if err != nil {
		if errors.Is(err, credentials.ErrInvalidRef) {
			return nil, fmt.Errorf("%w: the host credential for agent %q is not configured (%s)", remote.ErrConfig, ep.Key, ep.AuthRef)
		}
		return nil, fmt.Errorf("%w: agent %q: %w", remote.ErrConfig, ep.Key, err)
	}
	return &agent{client: client}, nil
}

type agent struct {
	client *aguiclient.Client
}

// Info implements remote.Agent: AG-UI runs always stream.
func (a *agent) Info() remote.Info { return remote.Info{Streaming: true} }

// Close implements remote.Agent.
func (a *agent) Close() error { return a.client.Close() }

// NewTask implements remote.Agent: one delegation is one AG-UI thread, its
// turns are runs on it. The thread is the remote context: the given one
// (a sticky context) or a new one.
func (a *agent) NewTask(spec remote.TaskSpec) remote.Task {
	t := &task{a: a, spec: spec, m: newMapper(spec.Transcript), thread: spec.ContextID}
	if t.thread == "" {
		t.thread = newID("thread-")
	}
	spec.Transcript.SetContextID(t.thread)
	t.history = []types.Message{{ID: newID("msg-"), Role: types.RoleUser, Content: spec.Text}}
	t.runID = newID("run-")
	spec.Transcript.SetTaskID(t.runID)
	return t
}

// task is one delegation to a remote AG-UI agent: one RunAgentInput POST
// per turn (the first with the task, one more per input answer, carrying
// the conversation).
type task struct {
	a       *agent
	spec    remote.TaskSpec
	m       *mapper
	thread  string
	runID   string
	history []types.Message
	seen    int // transcript messages already in history
}

func (t *task) Mode() string      { return "streaming" }
func (t *task) ContextID() string { return t.thread }

// Start implements remote.Task.
func (t *task) Start(ctx context.Context) error { return t.turn(ctx) }

// Answer implements remote.Task: the paused run's assistant messages and
// the answer join the history, and a new run on the same thread carries it.
func (t *task) Answer(ctx context.Context, text string) error {
	msgs, next := t.spec.Transcript.TextsSince(t.seen)
	for _, m := range msgs {
		if m.Text != "" {
			t.history = append(t.history, types.Message{ID: m.ID, Role: types.RoleAssistant, Content: m.Text})
		}
	}
	t.seen = next
	t.history = append(t.history, types.Message{ID: newID("msg-"), Role: types.RoleUser, Content: text})
	t.runID = newID("run-")
	t.m.newRun(t.runID)
	return t.turn(ctx)
}

// turn runs one AG-UI run and maps its events until the terminal event, a
// pause for input, or the end of the stream.
func (t *task) turn(ctx context.Context) error {
	err := t.stream(ctx)
	if t.spec.Transcript.Terminal() != "" {
		return nil
	}
	t.emit(t.m.ensureStarted())
	if ctx.Err() != nil || t.m.paused {
		return nil
	}
	if err == nil {
		err = aguiclient.NewError(clienterr.KindInterrupted, "stream", errors.New("the run ended before RUN_FINISHED or RUN_ERROR"))
	}
	return err
}

func (t *task) stream(ctx context.Context) error {
	in := aguiclient.Input{ThreadID: t.thread, RunID: t.runID, Messages: t.history, Context: t.context(),
		ForwardedProps: map[string]any{"agentadaptor": map[string]any{"delegation_id": t.spec.DelegationID}}}
	st, err := t.a.client.Run(ctx, in)
	if err != nil {
		return err
	}
	defer st.Close() // aborts the request if the run is still going
	for st.Next() {
		t.emit(t.m.Map(st.Event()))
		if t.spec.Transcript.Terminal() != "" || t.m.paused {
			return nil
		}
	}
	if err := st.Err(); err != nil {
		return err
	}
	return aguiclient.NewError(clienterr.KindInterrupted, "stream", errors.New("the run ended without a usable terminal event"))
}

func (t *task) emit(evs []delegation.DelegationEvent) {
	if len(evs) > 0 {
		t.spec.Emit(evs...)
	}
}

// context passes the input artifacts as AG-UI context entries: the content
// of text host artifacts, a reference otherwise (the host never fetches
// other URIs).
func (t *task) context() []types.Context {
	out := []types.Context{}
	for _, a := range t.spec.Artifacts {
		if a.Content != nil && (strings.HasPrefix(a.MimeType, "text/") || a.MimeType == "application/json") {
			out = append(out, types.Context{Description: "artifact " + a.Name + " (" + a.MimeType + ")", Value: string(a.Content)})
			continue
		}
		out = append(out, types.Context{Description: "artifact reference " + a.Name, Value: a.URI})
	}
	return out
}

// CanRecover implements remote.Task: an AG-UI run cannot be resumed.
func (t *task) CanRecover(error) bool { return false }

// Recover implements remote.Task: an AG-UI run cannot be resumed.
func (t *task) Recover(context.Context) error {
	return aguiclient.NewError(clienterr.KindInterrupted, "recover", errors.New("AG-UI runs cannot be resumed"))
}

// Cancel implements remote.Task. AG-UI has no cancel call: aborting the
// run's request (which ending its context did) is the cancellation the
// remote sees, so it is confirmed; a run that paused for input has already
// finished, and there is nothing to cancel.
func (t *task) Cancel(context.Context, map[string]any) remote.CancelOutcome {
	if t.m.paused {
		return remote.CancelNotNeeded
	}
	return remote.CancelConfirmed
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
