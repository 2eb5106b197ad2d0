package a2a

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// callRecord carries per-call transport facts from the RoundTripper back to
// the code that classifies the call's error.
type callRecord struct{ status atomic.Int32 }

type callRecordKey struct{}

func withCallRecord(ctx context.Context) (context.Context, *callRecord) {
	rec := &callRecord{}
	return context.WithValue(ctx, callRecordKey{}, rec), rec
}

func (r *callRecord) Status() int {
	if r == nil {
		return 0
	}
	return int(r.status.Load())
}

// statusRecorder records response status codes in the request's
// [callRecord] for error classification.
type statusRecorder struct{ base http.RoundTripper }

func (t statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if resp != nil {
		if rec, ok := req.Context().Value(callRecordKey{}).(*callRecord); ok {
			rec.status.Store(int32(resp.StatusCode))
		}
	}
	return resp, err
}

// newHTTPClient builds the *http.Client used for one remote agent
// (credentials.NewHTTPClient): the credential goes to the trusted origin
// only (a token-bearing Authorization header bound elsewhere is stripped),
// redirects stay within the first request's origin (a refusal is
// clienterr.KindProtocol, see classify), and response status codes are recorded.
// The client has no overall Timeout (it would cut SSE streams); unary calls
// get a context deadline instead.
func newHTTPClient(base *http.Client, trustedOrigin string, cred *credentials.Credential) (*http.Client, *http.Transport) {
	c, owned := credentials.NewHTTPClient(base, credentials.Transport{Origin: trustedOrigin, Cred: cred}, "point the agent card at the final URL")
	c.Transport = statusRecorder{c.Transport}
	return c, owned
}
