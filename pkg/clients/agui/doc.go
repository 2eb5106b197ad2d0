// Package agui is the host's client for remote AG-UI agents: it starts a run
// on a remote AG-UI endpoint and reads the run's event stream. Importers
// alias it aguiclient (pkg/bridges/agui is the other "agui").
//
// Typical use: run the remote agent on one message and read its events up
// to the terminal one.
//
//	c, err := aguiclient.New(aguiclient.Options{
//		EndpointURL: "https://agent.example/agui", AuthRef: "env:AGENT_TOKEN"})
//	if err != nil {
//		return err // an option error (a bad AuthRef wraps a *credentials.RefError)
//	}
//	defer c.Close()
//	s, err := c.Run(ctx, aguiclient.Input{Text: "summarise the report"})
//	if err != nil {
//		return err // a *clienterr.Error: see clienterr.KindOf
//	}
//	defer s.Close()
//	for s.Next() {
//		if ev, ok := s.Event().(*events.TextMessageContentEvent); ok {
//			fmt.Print(ev.Delta)
//		}
//	}
//	if err := s.Err(); err != nil {
//		return err // e.g. clienterr.ErrInterrupted: the run's outcome is unknown
//	}
//	// s.Terminal() is the RUN_FINISHED or RUN_ERROR event
//
// It owns the AG-UI wire handling on the calling side and nothing else:
//
//   - The request ([Client.Run]): a POST of an AG-UI RunAgentInput JSON
//     (threadId, runId, messages with one user message, tools [], context,
//     state {}, forwardedProps {}) with Accept: text/event-stream, on an
//     http.Client without an overall timeout (streams are long), bounded by
//     ConnectTimeout up to the response headers.
//   - Server-sent event framing ([Stream]): multi-line data, comments and
//     keep-alives, CRLF/LF/CR line ends, id: and event: lines, a bounded
//     frame size (MaxFrameBytes, default 1 MiB) and optionally a bounded
//     stream size (MaxStreamBytes), and an idle deadline (IdleTimeout).
//   - Event decoding ([DecodeEvent]) into the official AG-UI Go SDK's event
//     types (github.com/ag-ui-protocol/ag-ui/sdks/community/go,
//     pkg/core/events). Event types the SDK does not model (SUBAGENT_* from
//     an AG-UI 1.x remote, THINKING_*, future types) are passed through as
//     [*UnknownEvent] with their JSON, never as errors.
//   - Exactly one terminal: the stream ends at the first RUN_FINISHED or
//     RUN_ERROR; whatever follows is ignored. A stream that ends without one
//     is a [clienterr.KindInterrupted] error (AG-UI cannot resume a stream).
//   - Cancellation: cancelling the run's context or [Stream.Close] aborts the
//     HTTP request, which is how an AG-UI remote learns that the run was
//     cancelled (AG-UI has no cancel call).
//   - Credentials: Options.AuthRef (a host auth reference, "env:NAME" or
//     "file:/path", resolved by pkg/credentials with the same rules as
//     pkg/clients/a2a) or Options.Credential, sent as a bearer token only to
//     the endpoint's own origin; redirects to another origin are refused,
//     and the token never appears in errors, String() or logs.
//   - Errors: a run fails with a [*clienterr.Error] (pkg/clients/clienterr
//     owns the type, the kinds and the sentinels, shared with
//     pkg/clients/a2a); its message starts "agui: " and ends with this
//     client's hint. This package decides which HTTP status or failure is
//     which kind:
//     KindUnavailable, the remote could not be reached or answered 5xx, 408
//     or 429 (retryable);
//     KindRejected, another 4xx than 401, 403, 404, 408 and 429, or unusable
//     input;
//     KindUnauthorized, 401 or 403;
//     KindNotFound, 404: there is no AG-UI endpoint at that URL;
//     KindProtocol, a response that is not text/event-stream, a malformed or
//     oversized frame ([ErrFrameTooLarge], [ErrStreamTooLarge],
//     [ErrMalformedEvent]), or a refused redirect;
//     KindTimeout, the caller's deadline, ConnectTimeout or IdleTimeout;
//     KindCanceled, the caller cancelled its context or closed the stream;
//     KindInterrupted, the stream ended before RUN_FINISHED or RUN_ERROR.
//     [NewError] makes one in this client's terms.
//
// It must not decide delegation policy (which agent, timeouts per agent,
// retries, artifact limits) and must not produce UI or delegation events
// (DelegationEvent, subagent.* CUSTOM events, StreamPayload): callers read
// the SDK event values this package hands out and map them themselves, as
// the host's mapping of remote AG-UI events to delegation events does
// (docs/design.md#event-mapping). It imports the AG-UI Go SDK,
// pkg/credentials, pkg/clients/clienterr and the standard library only:
// never pkg/hosttools, pkg/adapters, the bridges or pkg/clients/a2a.
package agui
