// Package a2a is the host's A2A (Agent2Agent) client substrate, built on the
// official SDK github.com/a2aproject/a2a-go/v2.
//
// It owns the A2A wire handling for the host and nothing else:
//
//   - Agent Cards: fetching, lenient decoding, validation, RFC 8785
//     fingerprinting and a TTL cache ([ParseCard], [FetchCard], [CardResolver]).
//   - Transport choice from the card: JSON-RPC or HTTP+JSON, and A2A v0.3
//     agents through a2a-go's a2acompat/a2av0 layer ([NewClient]).
//   - Calls on one remote agent: send, streaming send, subscribe, get and
//     cancel, with tenant and history length carried to the wire ([Client]).
//   - Stream reading with exactly-one-terminal semantics ([Stream]) and
//     terminal/interrupted state helpers ([IsTerminal], [IsInterrupted]).
//   - Recovery of a cut stream by resubscribing or polling ([RecoverTask]).
//   - Credentials from host auth references ("env:NAME", "file:/path") sent as
//     a bearer token only to the card's own origin ([ResolveAuthRef]); the
//     mechanics are internal/authref's, shared with pkg/clients/agui.
//   - One typed error, [*Error], whose [Kind] says what the caller can do.
//     The type, the kinds and the sentinels are pkg/clients/clienterr's,
//     shared with pkg/clients/agui; the classification of a2a-go, HTTP and
//     network failures, the "a2a:" prefix and the hints are this package's.
//
// It must not decide delegation policy (timeouts per agent, artifact limits,
// input-required handling, retries beyond a single recovery), and it must not
// produce UI or stream events (DelegationEvent, AG-UI, SSE): callers read the
// a2a-go event values this package hands out and map them themselves.
//
// Breaking out of a stream or cancelling its context never cancels the remote
// task; call [Client.CancelTask] for that.
package a2a
