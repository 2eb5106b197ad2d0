// Package artifact keeps remote artifacts out of band: a delegation's events
// and tool result only reference an artifact by its host URI
// (host://delegations/{delegationId}/artifacts/{artifactId}); the content
// lives in a [Store] and is served by [Handler] at
// GET /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}.
//
// It owns the [Store] interface and its in-memory implementation
// ([MemoryStore], bounded, oldest evicted first), the host URI scheme
// ([URI], [ParseURI]), the sanitising of untrusted artifact metadata
// ([SanitizeMeta]) and the HTTP handler. It must not fetch anything: a URI
// that is not a host URI is only ever passed along as a reference. It must
// not know remote protocols or the delegator.
//
//	store := artifact.NewMemoryStore(64 << 20)
//	_ = store.Put(ctx, artifact.Stored{RunID: run, DelegationID: del, ID: "notes.md",
//		Name: "notes.md", MimeType: "text/markdown", Content: []byte("# Notes")})
//	uri := artifact.URI(del, "notes.md") // host://delegations/<del>/artifacts/notes.md
//	mux.Handle("GET /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}", artifact.Handler(store))
package artifact
