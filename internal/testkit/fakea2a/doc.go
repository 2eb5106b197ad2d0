// Package fakea2a is a programmable fake A2A agent for tests: a real HTTP
// server on 127.0.0.1 (httptest) running a2a-go's own server side
// (a2asrv handler, JSON-RPC and HTTP+JSON bindings, v0.3 compatibility),
// with scripted task behaviors, fault injection (dropped streams, malformed
// frames, malformed cards, auth failures, ignored cancels) and a record of
// every request it received.
//
// It is test support only: nothing in the product imports it, and it must
// not grow behaviour the product relies on.
package fakea2a
