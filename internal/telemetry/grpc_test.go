package telemetry

import (
	"context"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// fakeStream is a server stream whose messages go nowhere.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	sent int
}

func (f *fakeStream) Context() context.Context { return f.ctx }
func (f *fakeStream) SendMsg(any) error        { f.sent++; return nil }

// a2a serve's gRPC interceptors continue the caller's traceparent and
// tracestate from the call's metadata, start a new trace without one,
// record the method and status code only, and measure each call by its
// status code.
func TestA2AServeGRPCInterceptors(t *testing.T) {
	tr, sink := newSinkTracing(t)
	a := NewA2AServe(tr)
	const traceID, caller, secret = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "prompt-text-okapi"
	incoming := func(kv ...string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs(append(kv, "authorization", "Bearer "+secret, "x-note", secret)...))
	}
	traced := incoming("traceparent", "00-"+traceID+"-"+caller+"-01", "tracestate", "vendor=opaque")

	// Unary, in the caller's trace, failing with a caller's error.
	var unary trace.SpanContext
	_, err := a.unaryInterceptor(traced, secret, &grpc.UnaryServerInfo{FullMethod: "/lf.a2a.v1.A2AService/GetTask"}, func(ctx context.Context, _ any) (any, error) {
		unary = trace.SpanContextFromContext(ctx)
		return nil, status.Error(codes.NotFound, "task "+secret+" not found")
	})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("the handler's error was not returned: %v", err)
	}
	if unary.TraceID().String() != traceID || unary.TraceState().Get("vendor") != "opaque" {
		t.Fatalf("the unary handler's span %v (tracestate %q) does not continue the caller's", unary.TraceID(), unary.TraceState())
	}

	// Streaming, in the caller's trace, failing after a message.
	ss := &fakeStream{ctx: traced}
	var stream trace.SpanContext
	err = a.streamInterceptor(nil, ss, &grpc.StreamServerInfo{FullMethod: "/lf.a2a.v1.A2AService/SendStreamingMessage", IsServerStream: true},
		func(_ any, s grpc.ServerStream) error {
			stream = trace.SpanContextFromContext(s.Context())
			if err := s.SendMsg(secret); err != nil {
				return err
			}
			return status.Error(codes.Internal, secret)
		})
	if status.Code(err) != codes.Internal || ss.sent != 1 {
		t.Fatalf("stream: err %v, %d messages", err, ss.sent)
	}
	if stream.TraceID().String() != traceID {
		t.Fatalf("the stream handler's span is in trace %v", stream.TraceID())
	}

	// No traceparent: a new trace. A context error is CANCELLED, as grpc-go
	// reports it.
	var fresh trace.SpanContext
	_ = a.streamInterceptor(nil, &fakeStream{ctx: incoming()}, &grpc.StreamServerInfo{FullMethod: "/lf.a2a.v1.A2AService/SubscribeToTask"},
		func(_ any, s grpc.ServerStream) error {
			fresh = trace.SpanContextFromContext(s.Context())
			return context.Canceled
		})
	if !fresh.IsValid() || fresh.TraceID().String() == traceID {
		t.Fatalf("a call without traceparent got span %v", fresh)
	}
	_, _ = a.unaryInterceptor(incoming(), nil, &grpc.UnaryServerInfo{FullMethod: "/lf.a2a.v1.A2AService/ListTasks"},
		func(context.Context, any) (any, error) { return struct{}{}, nil })

	// The latency histogram, by binding and code.
	families, err := a.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, f := range families {
		if f.GetName() != "agentadaptor_a2a_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			series = append(series, labels["binding"]+" "+labels["code"])
			if m.GetHistogram().GetSampleCount() != 1 {
				t.Errorf("series %v: %d observations", labels, m.GetHistogram().GetSampleCount())
			}
		}
	}
	sort.Strings(series)
	if strings.Join(series, ",") != "grpc CANCELLED,grpc INTERNAL,grpc NOT_FOUND,grpc OK" {
		t.Fatalf("latency series: %v", series)
	}

	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := sink.Spans()
	if len(spans) != 4 {
		t.Fatalf("spans: %+v", spans)
	}
	byMethod := map[string]int{}
	for i, s := range spans {
		if s.Name != "a2a serve grpc" || s.Kind != "SPAN_KIND_SERVER" || len(s.Attrs) != 2 {
			t.Errorf("span %+v", s)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, secret) || strings.Contains(v, "opaque") {
				t.Errorf("span %q records %s=%q", s.Name, k, v)
			}
		}
		byMethod[s.Attrs["rpc.method"]] = i
	}
	for method, want := range map[string]struct{ code, trace, parent string }{
		"lf.a2a.v1.A2AService/GetTask":              {"NOT_FOUND", traceID, caller},
		"lf.a2a.v1.A2AService/SendStreamingMessage": {"INTERNAL", traceID, caller},
		"lf.a2a.v1.A2AService/SubscribeToTask":      {"CANCELLED", fresh.TraceID().String(), ""},
	} {
		i, ok := byMethod[method]
		if !ok {
			t.Errorf("no span for %s: %+v", method, spans)
			continue
		}
		s := spans[i]
		if s.Attrs["rpc.response.status_code"] != want.code || s.TraceID != want.trace || s.ParentSpanID != want.parent {
			t.Errorf("span of %s: %+v, want code %s in trace %s under %q", method, s, want.code, want.trace, want.parent)
		}
	}
}

func TestGRPCCodeNames(t *testing.T) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		n := grpcCodeName(c)
		// grpc-go's JSON names are the canonical ones.
		var back codes.Code
		if err := back.UnmarshalJSON([]byte(`"` + n + `"`)); err != nil || back != c {
			t.Errorf("%v is named %q (%v)", c, n, err)
		}
	}
	if grpcCodeName(codes.Code(99)) != "UNKNOWN" {
		t.Error("an undefined code is not UNKNOWN")
	}
}
