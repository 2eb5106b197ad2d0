package telemetry

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// GRPCServerOptions are the interceptors of a2a serve's gRPC binding, the
// counterpart of [A2AServe.Middleware]: each call (unary or streaming) gets
// a server span "a2a serve grpc" that continues the traceparent (and
// tracestate) of the call's metadata, so the task turns it starts are its
// children, and its time to the first response byte is observed as
// agentadaptor_a2a_request_duration_seconds{binding="grpc",code} (code: the
// gRPC status the call ended with, e.g. OK, NOT_FOUND). The span records the
// method and the status code, never a message, the status's text or a
// metadata value. Install them after the admission's interceptors (which
// then refuse calls without recording them, as on HTTP).
func (a *A2AServe) GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(a.unaryInterceptor), grpc.ChainStreamInterceptor(a.streamInterceptor)}
}

func (a *A2AServe) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	c := a.startCall(ctx, info.FullMethod)
	resp, err := h(c.ctx, req)
	c.end(err, time.Since(c.start))
	return resp, err
}

func (a *A2AServe) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	c := a.startCall(ss.Context(), info.FullMethod)
	s := &tracedStream{ServerStream: ss, ctx: c.ctx, start: c.start}
	err := h(srv, s)
	d := s.latency
	if d == 0 {
		d = time.Since(c.start)
	}
	c.end(err, d)
	return err
}

// grpcCall is one traced and measured gRPC call.
type grpcCall struct {
	a      *A2AServe
	ctx    context.Context
	span   trace.Span // nil with tracing off
	method string
	start  time.Time
}

func (a *A2AServe) startCall(ctx context.Context, fullMethod string) grpcCall {
	c := grpcCall{a: a, ctx: ctx, method: strings.TrimPrefix(fullMethod, "/"), start: time.Now()}
	if a.tracing.Enabled() {
		md, _ := metadata.FromIncomingContext(ctx)
		c.ctx, c.span = a.tracing.tracer.Start(a.tracing.prop.Extract(ctx, mdCarrier(md)), "a2a serve grpc",
			trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("rpc.method", c.method)))
	}
	return c
}

// end records the call's latency (to its first response byte) and ends its
// span with the status code err converts to, the way grpc-go converts a
// handler's error.
func (c grpcCall) end(err error, latency time.Duration) {
	code := codes.OK
	if err != nil {
		s, ok := status.FromError(err)
		if !ok {
			s = status.FromContextError(err)
		}
		code = s.Code()
	}
	name := grpcCodeName(code)
	c.a.latency.WithLabelValues("grpc", name).Observe(latency.Seconds())
	if c.span == nil {
		return
	}
	c.span.SetAttributes(attribute.String("rpc.response.status_code", name))
	if grpcServerError(code) {
		c.span.SetStatus(otelcodes.Error, name)
	}
	c.span.End()
}

// tracedStream gives a streaming handler the call's span and notes when
// the first response byte (headers or a message) went out.
type tracedStream struct {
	grpc.ServerStream
	ctx     context.Context
	start   time.Time
	latency time.Duration
}

func (s *tracedStream) Context() context.Context { return s.ctx }

func (s *tracedStream) sent() {
	if s.latency == 0 {
		s.latency = time.Since(s.start)
	}
}

func (s *tracedStream) SendHeader(md metadata.MD) error {
	s.sent()
	return s.ServerStream.SendHeader(md)
}

func (s *tracedStream) SendMsg(m any) error {
	s.sent()
	return s.ServerStream.SendMsg(m)
}

// mdCarrier reads the W3C trace context from incoming gRPC metadata (whose
// keys are lower case, as the propagator's).
type mdCarrier metadata.MD

func (m mdCarrier) Get(key string) string {
	if v := metadata.MD(m).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (m mdCarrier) Set(key, value string) { metadata.MD(m).Set(key, value) }

func (m mdCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// grpcCodeNames are the canonical names of the gRPC status codes (as the
// gRPC specification and OpenTelemetry's rpc.response.status_code spell
// them), a bounded label value.
var grpcCodeNames = [...]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
	codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
	codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
	codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
}

func grpcCodeName(c codes.Code) string {
	if int(c) < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return "UNKNOWN"
}

// grpcServerError reports whether a server span ending with c failed, as
// OpenTelemetry's gRPC conventions say (the server's fault, not the
// caller's).
func grpcServerError(c codes.Code) bool {
	switch c {
	case codes.Unknown, codes.DeadlineExceeded, codes.Unimplemented, codes.Internal, codes.Unavailable, codes.DataLoss:
		return true
	}
	return false
}
