package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"golang.org/x/mod/semver"

	"github.com/seed0634/agentadaptor/pkg/credentials"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// DefaultRequestTimeout bounds unary calls (Send, GetTask, CancelTask) when
// Options.RequestTimeout is 0. Streams have no overall timeout.
const DefaultRequestTimeout = 60 * time.Second

// Options configures a [Client]. The zero value is usable.
type Options struct {
	// HTTPClient supplies the base RoundTripper (and cookie jar). Its
	// Timeout and CheckRedirect are NOT used: an overall timeout would cut
	// SSE streams, and redirects to another origin are always refused.
	// Nil means a private transport that Close releases.
	HTTPClient *http.Client
	// AuthRef is a host auth reference ("env:NAME" or "file:/path"),
	// resolved by [credentials.Resolve]. The credential is sent as
	// "Authorization: Bearer" only to the origin the card was fetched from.
	AuthRef string
	// Credential is used instead of AuthRef when set.
	Credential *credentials.Credential
	// Auth, when set, replaces AuthRef: a bearer token, an API key header
	// or OAuth2 client credentials, completed (and checked) by the card's
	// securitySchemes; see [CompleteAuth].
	Auth *credentials.Auth
	// Secrets, if set, learns the secrets the client's credential uses
	// (including each OAuth2 access token), for the host's redaction.
	Secrets *credentials.Secrets
	// Resolver, if set, is used (and its cache shared) by NewClient to get
	// the card. Its own HTTPClient/Credential options apply to the fetch.
	Resolver *CardResolver
	// CardFetchTimeout bounds the card fetch in NewClient when Resolver is
	// nil; 0 means DefaultCardFetchTimeout.
	CardFetchTimeout time.Duration
	// RequestTimeout bounds each unary call; 0 means
	// DefaultRequestTimeout, negative means only ctx bounds it. A blocking
	// Send waits for the remote task, so use ReturnImmediately or streaming
	// for long tasks.
	RequestTimeout time.Duration
	// PreferredTransports reorders the card's interfaces of the same major
	// protocol version (e.g. prefer HTTP+JSON). Default: the card's order.
	PreferredTransports []TransportProtocol
	// MaxEventBytes bounds one SSE event (and line) of a stream
	// (0: DefaultMaxEventBytes); MaxResponseBytes a JSON response
	// (0: DefaultMaxResponseBytes); MaxStreamBytes one SSE response
	// (0: DefaultMaxStreamBytes). Beyond a bound the call fails at once
	// with a clienterr.KindProtocol error wrapping ErrEventTooLarge or
	// ErrResponseTooLarge. Attach a [ReadBudget] to bound several calls.
	MaxEventBytes, MaxResponseBytes, MaxStreamBytes int64
	// InterfaceOrigins are origins ("https://api.example") the card's
	// interfaces may point at besides the card's own origin. An interface
	// on any other origin is ignored (the task text would go there), and an
	// https card never uses a plain-http interface.
	InterfaceOrigins []string
}

// Client talks to one remote A2A agent, chosen from its card. It is safe for
// concurrent use. Close releases its connections.
type Client struct {
	card       *Card
	iface      sdk.AgentInterface
	sdk        *a2aclient.Client
	cred       *credentials.Credential
	owned      *http.Transport
	reqTimeout time.Duration

	closeOnce sync.Once
}

// NewClient fetches the Agent Card at cardURL and connects to the agent.
// Errors: a bad AuthRef wraps a [*credentials.RefError] (errors.Is
// [credentials.ErrInvalidRef]), otherwise [*clienterr.Error] (see
// [CardResolver.Resolve]).
func NewClient(ctx context.Context, cardURL string, opts Options) (*Client, error) {
	cred, err := fetchCredential(opts)
	if err != nil {
		return nil, err
	}
	var card *Card
	if opts.Resolver != nil {
		card, err = opts.Resolver.Resolve(ctx, cardURL)
	} else {
		timeout := opts.CardFetchTimeout
		if timeout <= 0 {
			timeout = DefaultCardFetchTimeout
		}
		hc, owned := newHTTPClient(opts.HTTPClient, credentials.Origin(cardURL), cred)
		card, err = fetchCard(ctx, hc, cardURL, timeout, credentials.Secret(cred), time.Now)
		if owned != nil {
			owned.CloseIdleConnections()
		}
	}
	if err != nil {
		cred.Close()
		return nil, err
	}
	opts.Credential = cred
	c, err := NewClientFromCard(ctx, card, opts)
	if err != nil {
		cred.Close()
	}
	return c, err
}

func credentialFrom(opts Options) (*credentials.Credential, error) {
	if opts.Credential != nil {
		return opts.Credential, nil
	}
	c, err := credentials.Resolve(opts.AuthRef)
	if err != nil {
		return nil, fmt.Errorf("a2a: Options.AuthRef: %w", err)
	}
	return c, nil
}

// NewClientFromCard connects to the agent described by card. The credential
// (if any) is only sent to card.Origin(); a card without SourceURL never
// gets one.
//
// The interface is chosen from the card: highest protocol major version
// first (1.x over 0.x), then Options.PreferredTransports, then the card's
// own order. v0.x interfaces go through a2a-go's a2acompat/a2av0 layer.
func NewClientFromCard(ctx context.Context, card *Card, opts Options) (*Client, error) {
	const op = "connect"
	if card == nil || card.Agent == nil || len(card.Agent.SupportedInterfaces) == 0 {
		return nil, NewError(clienterr.KindProtocol, op, errors.New("card has no usable interface; build it with ParseCard or FetchCard"))
	}
	cred, err := credentialFor(card, opts)
	if err != nil {
		return nil, err
	}
	usable, err := interfacesOnTrustedOrigins(card, opts.InterfaceOrigins)
	if err != nil {
		return nil, NewError(clienterr.KindProtocol, op, err)
	}
	hc, owned := newHTTPClient(opts.HTTPClient, card.Origin(), cred)
	hc.Transport = boundedBodies{base: hc.Transport, lim: limitsFrom(opts)}

	chosen := chooseInterface(usable, opts.PreferredTransports)
	agent := *card.Agent
	agent.SupportedInterfaces = []*sdk.AgentInterface{chosen}

	factory := a2aclient.NewFactory(
		a2aclient.WithDefaultsDisabled(),
		a2aclient.WithTransport(sdk.TransportProtocolJSONRPC, jsonrpcStreamTransport(hc)),
		a2aclient.WithRESTTransport(hc),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc}),
	)
	sc, err := factory.CreateFromCard(ctx, &agent)
	if err != nil {
		if owned != nil {
			owned.CloseIdleConnections()
		}
		return nil, NewError(clienterr.KindProtocol, op, fmt.Errorf("interface %s %s %s: %w", chosen.ProtocolBinding, chosen.ProtocolVersion, redactURL(chosen.URL), err))
	}
	timeout := opts.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	return &Client{card: card, iface: *chosen, sdk: sc, cred: cred, owned: owned, reqTimeout: timeout}, nil
}

// AuthScheme returns how the client authenticates: one of the
// credentials.Scheme constants, or "" without a credential.
func (c *Client) AuthScheme() credentials.Scheme {
	if c.cred == nil {
		return ""
	}
	return c.cred.Scheme()
}

func chooseInterface(ifaces []*sdk.AgentInterface, prefs []TransportProtocol) *sdk.AgentInterface {
	type cand struct {
		iface *sdk.AgentInterface
		major string
		pref  int
	}
	cands := make([]cand, 0, len(ifaces))
	for _, in := range ifaces {
		p := slices.Index(prefs, in.ProtocolBinding)
		if p < 0 {
			p = len(prefs)
		}
		major := semver.Major("v" + strings.TrimPrefix(string(in.ProtocolVersion), "v"))
		cands = append(cands, cand{in, major, p})
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if c := semver.Compare(b.major, a.major); c != 0 {
			return c
		}
		return a.pref - b.pref
	})
	return cands[0].iface
}

// Card returns the card the client was built from.
func (c *Client) Card() *Card { return c.card }

// Transport returns the protocol binding in use (JSONRPC or HTTP+JSON).
func (c *Client) Transport() TransportProtocol { return c.iface.ProtocolBinding }

// ProtocolVersion returns the A2A protocol version spoken ("1.0", "0.3", ...).
func (c *Client) ProtocolVersion() string { return string(c.iface.ProtocolVersion) }

// Endpoint returns the URL of the interface in use.
func (c *Client) Endpoint() string { return c.iface.URL }

// Close releases idle connections of the client's private transport. Open
// streams must be closed by their owners. Close never cancels remote tasks.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		_ = c.sdk.Destroy()
		if c.owned != nil {
			c.owned.CloseIdleConnections()
		}
		c.cred.Close()
	})
	return nil
}

func (c *Client) unaryCtx(ctx context.Context) (context.Context, context.CancelFunc, *callRecord) {
	cancel := context.CancelFunc(func() {})
	if c.reqTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.reqTimeout)
	}
	ctx, rec := withCallRecord(ctx)
	return ctx, cancel, rec
}

// SendRequest is one message to the agent.
type SendRequest struct {
	// Message is sent as is when set (its TaskID/ContextID are filled from
	// the fields below when empty). Otherwise a user message with one text
	// part is built from Text.
	Message *Message
	// Text is the user text when Message is nil.
	Text string
	// TaskID continues an existing task (e.g. answering input-required).
	TaskID TaskID
	// ContextID joins an existing remote context.
	ContextID string
	// Tenant is sent as the request's tenant (empty: the interface's tenant).
	Tenant string
	// ReturnImmediately asks the agent to answer as soon as the task is
	// created instead of waiting for it to finish (non-blocking send).
	ReturnImmediately bool
	// HistoryLength limits the history returned with the task.
	HistoryLength *int
	// AcceptedOutputModes lists the media types the caller accepts.
	AcceptedOutputModes []string
	// Metadata is attached to the request.
	Metadata map[string]any
}

// SendResult is the answer to a Send: exactly one of Task and Message is set.
type SendResult struct {
	// Task is the task the message created or continued, as the agent
	// reported it when the call returned: terminal or interrupted
	// (input-required, auth-required), or as created when
	// ReturnImmediately was set.
	Task *Task
	// Message is the agent's direct reply when it answered without
	// creating a task.
	Message *Message
}

func (r SendRequest) build() (*sdk.SendMessageRequest, error) {
	var msg *sdk.Message
	if r.Message != nil {
		cp := *r.Message
		msg = &cp
	} else {
		if r.Text == "" {
			return nil, errors.New("SendRequest needs Text or a Message with parts")
		}
		msg = sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart(r.Text))
	}
	if len(msg.Parts) == 0 {
		return nil, errors.New("SendRequest message has no parts")
	}
	if msg.ID == "" {
		msg.ID = sdk.NewMessageID()
	}
	if msg.Role == "" {
		msg.Role = sdk.MessageRoleUser
	}
	if msg.TaskID == "" {
		msg.TaskID = r.TaskID
	}
	if msg.ContextID == "" {
		msg.ContextID = r.ContextID
	}
	req := &sdk.SendMessageRequest{Tenant: r.Tenant, Message: msg, Metadata: r.Metadata}
	if r.ReturnImmediately || r.HistoryLength != nil || len(r.AcceptedOutputModes) > 0 {
		req.Config = &sdk.SendMessageConfig{
			ReturnImmediately:   r.ReturnImmediately,
			HistoryLength:       r.HistoryLength,
			AcceptedOutputModes: r.AcceptedOutputModes,
		}
	}
	return req, nil
}

// Send sends a message and waits for the agent's answer: the task (final, or
// as created when ReturnImmediately is set) or a direct message reply. It is
// bounded by ctx and Options.RequestTimeout.
func (c *Client) Send(ctx context.Context, r SendRequest) (*SendResult, error) {
	const op = "send"
	req, err := r.build()
	if err != nil {
		return nil, NewError(clienterr.KindRejected, op, err)
	}
	ctx, cancel, rec := c.unaryCtx(ctx)
	defer cancel()
	res, err := c.sdk.SendMessage(ctx, req)
	if err != nil {
		return nil, classify(ctx, op, err, rec.Status(), false, credentials.Secret(c.cred))
	}
	if err := ValidateEvent(res); err != nil {
		return nil, withOp(err, op)
	}
	switch v := res.(type) {
	case *sdk.Task:
		return &SendResult{Task: v}, nil
	case *sdk.Message:
		return &SendResult{Message: v}, nil
	}
	return nil, NewError(clienterr.KindProtocol, op, fmt.Errorf("unexpected result %T", res))
}

// GetTaskRequest asks for a task snapshot.
type GetTaskRequest struct {
	// TaskID is required.
	TaskID TaskID
	// Tenant is sent as the request's tenant (empty: the interface's tenant).
	Tenant string
	// HistoryLength limits the returned history (nil: agent default, 0: none).
	HistoryLength *int
}

// GetTask returns the current snapshot of a task. A task unknown to the
// agent is clienterr.KindNotFound.
func (c *Client) GetTask(ctx context.Context, r GetTaskRequest) (*Task, error) {
	const op = "get task"
	if r.TaskID == "" {
		return nil, NewError(clienterr.KindRejected, op, errors.New("GetTaskRequest.TaskID is required"))
	}
	ctx, cancel, rec := c.unaryCtx(ctx)
	defer cancel()
	t, err := c.sdk.GetTask(ctx, &sdk.GetTaskRequest{ID: r.TaskID, Tenant: r.Tenant, HistoryLength: r.HistoryLength})
	if err != nil {
		return nil, classify(ctx, op, err, rec.Status(), false, credentials.Secret(c.cred))
	}
	if err := ValidateEvent(t); err != nil {
		return nil, withOp(err, op)
	}
	return t, nil
}

// CancelTaskRequest asks the agent to cancel a task.
type CancelTaskRequest struct {
	// TaskID is required.
	TaskID TaskID
	// Tenant is sent as the request's tenant (empty: the interface's tenant).
	Tenant string
	// Metadata is structured cancellation context (reason, requester, ...).
	// Note: a2a-go's HTTP+JSON transport does not send it; JSON-RPC does.
	Metadata map[string]any
}

// CancelTask asks the agent to cancel a task and returns the task as the
// agent reports it. An agent that refuses is clienterr.KindRejected; an unknown task
// is clienterr.KindNotFound. Bounded by ctx and Options.RequestTimeout, so a hanging
// remote cancel returns clienterr.KindTimeout.
func (c *Client) CancelTask(ctx context.Context, r CancelTaskRequest) (*Task, error) {
	const op = "cancel task"
	if r.TaskID == "" {
		return nil, NewError(clienterr.KindRejected, op, errors.New("CancelTaskRequest.TaskID is required"))
	}
	ctx, cancel, rec := c.unaryCtx(ctx)
	defer cancel()
	t, err := c.sdk.CancelTask(ctx, &sdk.CancelTaskRequest{ID: r.TaskID, Tenant: r.Tenant, Metadata: r.Metadata})
	if err != nil {
		return nil, classify(ctx, op, err, rec.Status(), false, credentials.Secret(c.cred))
	}
	if err := ValidateEvent(t); err != nil {
		return nil, withOp(err, op)
	}
	return t, nil
}

func withOp(err error, op string) error {
	var e *clienterr.Error
	if errors.As(err, &e) {
		e.Op = op
	}
	return err
}
