package agui

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/seed0634/agentadaptor/pkg/credentials"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// Defaults of [Options].
const (
	DefaultMaxFrameBytes  = 1 << 20
	DefaultConnectTimeout = 30 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
)

// maxErrorBody bounds how much of a non-2xx or non-SSE response is read for
// Error.Body.
const maxErrorBody = 4 << 10

// Options configures a [Client]. EndpointURL is required.
type Options struct {
	// EndpointURL is the remote agent's AG-UI endpoint: an absolute http(s)
	// URL without user info, which receives the POST.
	EndpointURL string
	// AuthRef is a host auth reference ("env:NAME" or "file:/path"),
	// resolved by [credentials.Resolve]. The credential is sent as
	// "Authorization: Bearer" only to EndpointURL's origin.
	AuthRef string
	// Credential is used instead of AuthRef when set.
	Credential *credentials.Credential
	// HTTPClient supplies the base RoundTripper and cookie jar. Its Timeout
	// and CheckRedirect are NOT used: an overall timeout would cut the
	// stream, and redirects to another origin are always refused. Nil means
	// a private transport that [Client.Close] releases.
	HTTPClient *http.Client
	// Headers are added to every request. They cannot set Authorization
	// (use AuthRef), Content-Type, Accept, Content-Length or Host.
	Headers map[string]string
	// MaxFrameBytes bounds one SSE frame (its field lines together, and
	// each line including comments); 0 means DefaultMaxFrameBytes. A larger
	// frame ends the stream with a clienterr.KindProtocol error wrapping
	// [ErrFrameTooLarge].
	MaxFrameBytes int
	// MaxStreamBytes bounds the whole response body; 0 means no limit. A
	// longer stream ends with a clienterr.KindProtocol error wrapping
	// [ErrStreamTooLarge].
	MaxStreamBytes int64
	// ConnectTimeout bounds the time from sending the request to the
	// response headers (and, for an error response, its excerpt); 0 means
	// DefaultConnectTimeout, negative means only ctx bounds it.
	ConnectTimeout time.Duration
	// IdleTimeout ends the stream with a clienterr.KindTimeout error when the remote
	// sends no byte at all (no frame, no keep-alive comment) for this long
	// while [Stream.Next] is waiting (time the consumer spends between
	// calls does not count); 0 means DefaultIdleTimeout, negative disables
	// it.
	IdleTimeout time.Duration
}

// Client runs agents on one remote AG-UI endpoint. It is safe for
// concurrent use; each [Client.Run] is one HTTP request with its own
// [Stream]. Close releases idle connections.
type Client struct {
	endpoint       *url.URL
	origin         string
	cred           *credentials.Credential
	http           *http.Client
	owned          *http.Transport
	headers        map[string]string
	maxFrame       int
	maxStream      int64
	connectTimeout time.Duration
	idleTimeout    time.Duration
	closeOnce      sync.Once
}

var reservedHeaders = map[string]bool{
	"Authorization": true, "Content-Type": true, "Accept": true, "Content-Length": true, "Host": true,
}

// New checks opts and returns a client. Errors name the Options field at
// fault; an AuthRef that cannot be resolved wraps a
// [*credentials.RefError] (errors.Is [credentials.ErrInvalidRef]). New does
// no network I/O.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.EndpointURL)
	switch {
	case opts.EndpointURL == "":
		return nil, errors.New("agui: Options.EndpointURL is required")
	case err != nil:
		return nil, fmt.Errorf("agui: Options.EndpointURL: %v", err)
	case credentials.OriginOf(u) == "":
		return nil, fmt.Errorf("agui: Options.EndpointURL %q: want an absolute http or https URL", u.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("agui: Options.EndpointURL %q: user info is not allowed; use AuthRef", u.Redacted())
	}
	cred := opts.Credential
	if cred == nil {
		if cred, err = credentials.Resolve(opts.AuthRef); err != nil {
			return nil, fmt.Errorf("agui: Options.AuthRef: %w", err)
		}
	}
	headers := make(map[string]string, len(opts.Headers))
	for k, v := range opts.Headers {
		name := http.CanonicalHeaderKey(strings.TrimSpace(k))
		if !validHeaderName(name) {
			return nil, fmt.Errorf("agui: Options.Headers: invalid header name %q", k)
		}
		if reservedHeaders[name] {
			return nil, fmt.Errorf("agui: Options.Headers: %s is set by the client and cannot be overridden", name)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("agui: Options.Headers: the value of %s contains a line break or NUL", name)
		}
		headers[name] = v
	}
	if opts.MaxFrameBytes < 0 || opts.MaxStreamBytes < 0 {
		return nil, errors.New("agui: Options.MaxFrameBytes and MaxStreamBytes must not be negative")
	}
	c := &Client{
		endpoint: u, origin: credentials.OriginOf(u), cred: cred, headers: headers,
		maxFrame: opts.MaxFrameBytes, maxStream: opts.MaxStreamBytes,
		connectTimeout: durationOr(opts.ConnectTimeout, DefaultConnectTimeout),
		idleTimeout:    durationOr(opts.IdleTimeout, DefaultIdleTimeout),
	}
	if c.maxFrame == 0 {
		c.maxFrame = DefaultMaxFrameBytes
	}
	c.http, c.owned = newHTTPClient(opts.HTTPClient, c.origin, cred)
	return c, nil
}

func durationOr(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// Endpoint returns the endpoint URL (user info cannot be present).
func (c *Client) Endpoint() string { return c.endpoint.String() }

// String describes the client without revealing the credential.
func (c *Client) String() string {
	return fmt.Sprintf("agui.Client(%s, %s)", c.endpoint, c.cred)
}

// Close releases the idle connections of the client's private transport.
// Streams already running are not affected; close them separately.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		if c.owned != nil {
			c.owned.CloseIdleConnections()
		}
	})
	return nil
}

// Input is what one run sends: it becomes an AG-UI RunAgentInput.
type Input struct {
	// ThreadID and RunID identify the run; empty means a random
	// "thread-…"/"run-…" id.
	ThreadID string
	RunID    string
	// Text is the task, sent as one user message.
	Text string
	// MessageID is the id of that user message; empty means a random
	// "msg-…" id.
	MessageID string
	// Messages, when non-empty, is sent instead of the single user
	// message built from Text and MessageID (e.g. to carry history).
	Messages []types.Message
	// Context entries; nil sends [].
	Context []types.Context
	// State and ForwardedProps are sent as is; nil sends {}.
	State          any
	ForwardedProps any
}

// RunAgentInput returns the wire body for in, with random ids filled in
// where in has none. tools is always [] (the host exposes no frontend
// tools to a remote agent).
func (in Input) RunAgentInput() (types.RunAgentInput, error) {
	ri := types.RunAgentInput{
		ThreadID: in.ThreadID, RunID: in.RunID,
		State: in.State, ForwardedProps: in.ForwardedProps,
		Messages: in.Messages, Tools: []types.Tool{}, Context: in.Context,
	}
	if ri.ThreadID == "" {
		ri.ThreadID = newID("thread-")
	}
	if ri.RunID == "" {
		ri.RunID = newID("run-")
	}
	if ri.State == nil {
		ri.State = map[string]any{}
	}
	if ri.ForwardedProps == nil {
		ri.ForwardedProps = map[string]any{}
	}
	if ri.Context == nil {
		ri.Context = []types.Context{}
	}
	if len(ri.Messages) == 0 {
		if strings.TrimSpace(in.Text) == "" {
			return ri, errors.New("the input has no text (set Input.Text or Input.Messages)")
		}
		id := in.MessageID
		if id == "" {
			id = newID("msg-")
		}
		ri.Messages = []types.Message{{ID: id, Role: types.RoleUser, Content: in.Text}}
	}
	return ri, nil
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

type causeError struct {
	msg  string
	base error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.base }

// Cancellation causes of a run's request context.
var (
	errStreamClosed = &causeError{"the stream was closed by the caller", context.Canceled}
	errStreamDone   = &causeError{"the stream ended", context.Canceled}
)

func timeoutCause(msg string) error {
	return &causeError{msg, context.DeadlineExceeded}
}

// Run POSTs the input to the endpoint as an AG-UI RunAgentInput (Accept:
// text/event-stream) and returns the event stream once the response headers
// have arrived.
//
// Errors, all [*clienterr.Error] with Op "run": clienterr.KindUnauthorized for 401/403,
// clienterr.KindNotFound for 404, clienterr.KindUnavailable for 5xx/408/429 and network
// failures, clienterr.KindRejected for other 4xx and for an input without text,
// clienterr.KindProtocol for a 2xx response that is not text/event-stream or a
// redirect to another origin, clienterr.KindTimeout for ctx's deadline or
// ConnectTimeout, clienterr.KindCanceled when ctx is cancelled.
//
// The stream lives as long as ctx: cancelling ctx (or [Stream.Close])
// aborts the request, which the remote sees as a disconnect.
func (c *Client) Run(ctx context.Context, in Input) (*Stream, error) {
	ri, err := in.RunAgentInput()
	if err != nil {
		return nil, NewError(clienterr.KindRejected, "run", err)
	}
	body, err := json.Marshal(ri)
	if err != nil {
		return nil, NewError(clienterr.KindRejected, "run", fmt.Errorf("encoding RunAgentInput: %w", err))
	}
	sctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, c.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		cancel(errStreamDone)
		return nil, NewError(clienterr.KindRejected, "run", err)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")

	var connectTimer *time.Timer
	if c.connectTimeout > 0 {
		cause := timeoutCause(fmt.Sprintf("no response headers within %s (ConnectTimeout)", c.connectTimeout))
		connectTimer = time.AfterFunc(c.connectTimeout, func() { cancel(cause) })
	}
	fail := func(e *clienterr.Error) (*Stream, error) {
		if connectTimer != nil {
			connectTimer.Stop()
		}
		cancel(errStreamDone)
		return nil, e
	}
	secret := credentials.Secret(c.cred)
	resp, err := c.http.Do(req)
	if err != nil {
		return fail(c.requestError(ctx, sctx, err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := statusError(statusKind(resp.StatusCode), "run", resp.StatusCode, nil)
		e.Body = readExcerpt(resp.Body, secret)
		_ = resp.Body.Close()
		return fail(e)
	}
	if mt, _, perr := mime.ParseMediaType(resp.Header.Get("Content-Type")); perr != nil || mt != "text/event-stream" {
		e := statusError(clienterr.KindProtocol, "run", resp.StatusCode,
			fmt.Errorf("response Content-Type is %q, want text/event-stream", resp.Header.Get("Content-Type")))
		e.Body = readExcerpt(resp.Body, secret)
		_ = resp.Body.Close()
		return fail(e)
	}
	if connectTimer != nil && !connectTimer.Stop() {
		// The timer fired while the headers were being checked.
		_ = resp.Body.Close()
		return fail(c.requestError(ctx, sctx, context.Cause(sctx)))
	}
	return newStream(ctx, sctx, cancel, resp, c, secret), nil
}

// requestError classifies a failure before the response headers.
func (c *Client) requestError(callerCtx, sctx context.Context, err error) *clienterr.Error {
	secret := credentials.Secret(c.cred)
	if cerr := callerCtx.Err(); cerr != nil {
		return ctxError(callerCtx, "run", secret)
	}
	if sctx.Err() != nil {
		if cause := context.Cause(sctx); errors.Is(cause, context.DeadlineExceeded) {
			return NewError(clienterr.KindTimeout, "run", cause)
		}
	}
	if re, ok := errors.AsType[*credentials.RedirectError](err); ok {
		return NewError(clienterr.KindProtocol, "run", re)
	}
	return NewError(clienterr.KindUnavailable, "run", redactErr(err, secret))
}

// ctxError reports the caller's cancellation or deadline, which explains
// whatever the transport reported afterwards.
func ctxError(ctx context.Context, op, secret string) *clienterr.Error {
	cerr := ctx.Err()
	k := clienterr.KindCanceled
	if errors.Is(cerr, context.DeadlineExceeded) {
		k = clienterr.KindTimeout
	}
	err := cerr
	if cause := context.Cause(ctx); cause != nil && cause != cerr {
		err = fmt.Errorf("%w: %v", cerr, cause)
	}
	return NewError(k, op, redactErr(err, secret))
}

func statusKind(status int) clienterr.Kind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return clienterr.KindUnauthorized
	case status == http.StatusNotFound:
		return clienterr.KindNotFound
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return clienterr.KindUnavailable
	case status >= 400:
		return clienterr.KindRejected
	}
	// 1xx/3xx that reached us (e.g. an unfollowed redirect): not AG-UI.
	return clienterr.KindProtocol
}

func readExcerpt(r io.Reader, secret string) string {
	b, _ := io.ReadAll(io.LimitReader(r, maxErrorBody+1))
	truncated := len(b) > maxErrorBody
	if truncated {
		b = b[:maxErrorBody]
	}
	return excerpt(b, truncated, secret)
}

// newHTTPClient builds the client's *http.Client (credentials.NewHTTPClient):
// the credential goes to the endpoint's origin only, every Authorization
// header bound elsewhere is stripped, and redirects stay within the origin
// of the first request (a refusal is a [*credentials.RedirectError], which
// the run reports as KindProtocol).
func newHTTPClient(base *http.Client, origin string, cred *credentials.Credential) (*http.Client, *http.Transport) {
	return credentials.NewHTTPClient(base, credentials.Transport{Origin: origin, Cred: cred, StripForeignAuth: true},
		"configure the final endpoint URL")
}
