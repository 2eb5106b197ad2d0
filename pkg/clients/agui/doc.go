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
//		return err // an option error or *aguiclient.AuthRefError
//	}
//	defer c.Close()
//	s, err := c.Run(ctx, aguiclient.Input{Text: "summarise the report"})
//	if err != nil {
//		return err // *aguiclient.Error: see aguiclient.KindOf
//	}
//	defer s.Close()
//	for s.Next() {
//		if ev, ok := s.Event().(*events.TextMessageContentEvent); ok {
//			fmt.Print(ev.Delta)
//		}
//	}
//	if err := s.Err(); err != nil {
//		return err // e.g. ErrInterrupted: the run's outcome is unknown
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
//     is an [ErrInterrupted] error (AG-UI cannot resume a stream).
//   - Cancellation: cancelling the run's context or [Stream.Close] aborts the
//     HTTP request, which is how an AG-UI remote learns that the run was
//     cancelled (AG-UI has no cancel call).
//   - Credentials from host auth references ("env:NAME", "file:/path",
//     [ResolveAuthRef], same rules as pkg/clients/a2a) sent as a bearer token
//     only to the endpoint's own origin; redirects to another origin are
//     refused, and the token never appears in errors, String() or logs.
//   - One typed error, [*Error], whose [Kind] says what the caller can do
//     (unavailable, rejected, unauthorized, not found, protocol, timeout,
//     canceled, interrupted), matched with errors.Is and the Err* sentinels.
//     The type, the kinds and the sentinels are pkg/clients/clienterr's,
//     shared with pkg/clients/a2a; which HTTP status or failure is which
//     kind, the "agui:" prefix and the hints are this package's.
//
// It must not decide delegation policy (which agent, timeouts per agent,
// retries, artifact limits) and must not produce UI or delegation events
// (DelegationEvent, subagent.* CUSTOM events, StreamPayload): callers read
// the SDK event values this package hands out and map them themselves, as
// the host's mapping of remote AG-UI events to delegation events does
// (docs/design.md#event-mapping). It imports the AG-UI Go SDK,
// pkg/credentials, pkg/clients/clienterr and the standard library only:
// never pkg/hosttools, pkg/adapters, the bridges or pkg/clients/a2a.
//
// The credential handling (auth references, [Credential], the origin-bound
// transport and redirect policy, redaction) lives in pkg/credentials,
// shared with pkg/clients/a2a without pulling the A2A SDK into AG-UI
// callers; [Credential] and [AuthRefError] are aliases of its types, while
// [ErrInvalidAuthRef] stays this package's own.
package agui
