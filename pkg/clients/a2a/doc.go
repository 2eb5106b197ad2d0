// Package a2a is the host's A2A (Agent2Agent) client substrate, built on the
// official SDK github.com/a2aproject/a2a-go/v2.
//
// Typical use: connect from the agent's card URL, stream a task to its end,
// and recover if the stream is cut.
//
//	c, err := a2a.NewClient(ctx, "https://agent.example/.well-known/agent-card.json",
//		a2a.Options{AuthRef: "env:AGENT_TOKEN"})
//	if err != nil {
//		return err // a *clienterr.Error (see clienterr.KindOf), or a bad AuthRef
//	}
//	defer c.Close()
//	s, err := c.SendStreaming(ctx, a2a.SendRequest{Text: "summarise the report"})
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	for s.Next() {
//		switch ev := s.Event().(type) {
//		case *a2a.StatusUpdate:
//			log.Println("state", ev.Status.State)
//		case *a2a.ArtifactUpdate:
//			fmt.Print(a2a.TextOf(ev.Artifact.Parts))
//		}
//	}
//	if err := s.Err(); errors.Is(err, clienterr.ErrInterrupted) {
//		// The task goes on remotely: re-attach (resubscribe, or poll if it ended).
//		rep, err := a2a.RecoverTask(ctx, c, s.TaskID(), a2a.RecoverOptions{})
//		if err != nil {
//			return err
//		}
//		log.Println("final state", rep.State)
//	} else if err != nil {
//		return err
//	}
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
//     A 1.0 JSON-RPC stream is read here rather than by a2a-go (a small
//     buffer, artifact updates decoded in one pass, everything else exactly
//     as a2a-go decodes it), on the consumer's goroutine (iter.Pull): no
//     goroutine and no hand-off per event (docs/design.md#layering).
//   - Recovery of a cut stream by resubscribing or polling ([RecoverTask]).
//   - Credentials: Options.AuthRef (a host auth reference, "env:NAME" or
//     "file:/path"), Options.Credential or Options.Auth (bearer, API key or
//     OAuth2 client credentials, completed and checked by the card's
//     securitySchemes: [CompleteAuth]) are sent only to the card's own
//     origin. The credential itself, the origin-bound transport and the
//     redaction are pkg/credentials's, shared with pkg/clients/agui.
//   - Errors: every call fails with a [*clienterr.Error] (pkg/clients/clienterr
//     owns the type, the kinds and the sentinels, shared with
//     pkg/clients/agui); its message starts "a2a: " and ends with this
//     client's hint. This package decides which a2a-go, HTTP or network
//     failure is which kind:
//     KindUnavailable, the agent could not be reached, answered 5xx (or a
//     bare 404), or its card could not be fetched (retryable);
//     KindRejected, it refused the request (invalid params, unsupported
//     operation, task not cancelable, other 4xx);
//     KindUnauthorized, 401/403, an A2A unauthenticated or
//     permission-denied error, or an OAuth2 token endpoint that refused the
//     client (errors.Is [credentials.ErrCredentialsRefused]);
//     KindNotFound, it does not know the task;
//     KindProtocol, a malformed card or payload, an unexpected event, a
//     refused redirect ([*credentials.RedirectError]);
//     KindTimeout and KindCanceled, the caller's deadline or cancellation
//     (errors.Is context.DeadlineExceeded or context.Canceled also holds);
//     KindInterrupted, a stream cut before a terminal or interrupted state
//     (recover with [RecoverTask]). [NewError] makes one in this client's
//     terms. A bad Options.AuthRef is a [*credentials.RefError] instead.
//
// It must not decide delegation policy (timeouts per agent, artifact limits,
// input-required handling, retries beyond a single recovery), and it must not
// produce UI or stream events (DelegationEvent, AG-UI, SSE): callers read the
// a2a-go event values this package hands out and map them themselves. It
// imports a2a-go, pkg/credentials, pkg/clients/clienterr and small
// libraries (JSON canonicalization, semver) only: never pkg/hosttools,
// pkg/adapters, the bridges or pkg/clients/agui.
//
// Breaking out of a stream or cancelling its context never cancels the remote
// task; call [Client.CancelTask] for that.
package a2a
