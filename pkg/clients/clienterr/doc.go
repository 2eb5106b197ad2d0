// Package clienterr is the error-kind core shared by the host's remote-agent
// clients, pkg/clients/a2a and pkg/clients/agui: one [Kind] per thing a
// caller can do about a failure, one sentinel per kind for errors.Is, and
// one error type, [*Error], whose message names the protocol, the
// operation, the kind, the cause and a hint.
//
// Callers of either client match its errors with this package's names
// (errors.Is(err, clienterr.ErrNotFound), clienterr.KindOf(err)), whichever
// client made them; each client's doc says which failure is which kind. A
// client builds its errors with its Protocol ("a2a", "agui"), which prefixes
// the message, and its Hints, the per-kind advice it appends (its NewError
// does both):
//
//	hints := map[clienterr.Kind]string{clienterr.KindNotFound: "check the task id"}
//	err := fmt.Errorf("delegating: %w", &clienterr.Error{
//		Protocol: "a2a", Kind: clienterr.KindNotFound, Op: "get task",
//		Err: errors.New("task t-1 not found"), Hints: hints,
//	})
//	errors.Is(err, clienterr.ErrNotFound) // true
//	clienterr.KindOf(err)                 // clienterr.KindNotFound
//	err.Error() // delegating: a2a: get task: not found: task t-1 not found — check the task id
//
// It owns the kinds, their names, the sentinels, the [*Error] type and its
// message format, retryability by kind, and [KindOf]. It must not classify
// protocol failures (which HTTP status, SDK error or network failure is
// which kind is each client's business), must not redact or read response
// bodies (a client puts only redacted, bounded text in an Error), and
// imports the standard library only, never a client, an SDK or
// pkg/credentials.
package clienterr
