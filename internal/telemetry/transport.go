package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// callKey is the context key of the ids a delegation gives its remote calls.
type callKey struct{}

// callIDs are the host-made ids every span of a delegation's remote calls
// carries.
type callIDs struct{ runID, delegationID string }

func withCallIDs(ctx context.Context, runID, delegationID string) context.Context {
	return context.WithValue(ctx, callKey{}, callIDs{runID, delegationID})
}

// Transport returns a RoundTripper that sends each request through base
// inside a client span ("<protocol> <METHOD>") and carries the span to the
// remote as traceparent (docs/design.md#observability). Requests whose
// context holds no span (a startup card fetch, a cleanup watcher's cancel)
// are sent untouched. The span ends when the response body is read to its
// end or closed (an SSE stream's span lasts as long as the stream). It
// records the method, the server's address and port, the status code and
// the run and delegation ids, never the URL's path or query, a header or a
// body.
func (t *Tracing) Transport(base http.RoundTripper, protocol string) http.RoundTripper {
	if !t.Enabled() {
		return base
	}
	return &clientTransport{t: t, base: base, protocol: protocol}
}

type clientTransport struct {
	t        *Tracing
	base     http.RoundTripper
	protocol string
}

func (c *clientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return c.base.RoundTrip(req)
	}
	attrs := []attribute.KeyValue{attribute.String("http.request.method", req.Method), attribute.String("agentadaptor.protocol", c.protocol)}
	if host, port, err := net.SplitHostPort(req.URL.Host); err == nil {
		attrs = append(attrs, attribute.String("server.address", host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	} else {
		attrs = append(attrs, attribute.String("server.address", req.URL.Hostname()))
	}
	if ids, ok := ctx.Value(callKey{}).(callIDs); ok {
		attrs = append(attrs, attribute.String("agentadaptor.run_id", ids.runID), attribute.String("agentadaptor.delegation_id", ids.delegationID))
	}
	ctx, span := c.t.tracer.Start(ctx, c.protocol+" "+req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	req = req.Clone(ctx)
	c.t.Inject(ctx, req.Header)
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		// The error's text may hold the URL: the status says only that it failed.
		span.SetStatus(codes.Error, "the request failed")
		span.End()
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		span.End()
		return resp, nil
	}
	resp.Body = &spanBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// spanBody ends its span at the body's end or close, whichever is first.
type spanBody struct {
	io.ReadCloser
	span trace.Span
	once sync.Once
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *spanBody) Close() error {
	err := b.ReadCloser.Close()
	b.end(nil)
	return err
}

func (b *spanBody) end(err error) {
	b.once.Do(func() {
		if err != nil && err != io.EOF {
			b.span.SetStatus(codes.Error, "reading the response failed")
		}
		b.span.End()
	})
}
