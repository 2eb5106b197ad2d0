// Package otlpsink is a tiny OpenTelemetry trace receiver for tests and
// benchmarks (docs/design.md#observability): it accepts OTLP/HTTP protobuf
// exports (POST /v1/traces, optionally gzip-compressed) on loopback and
// keeps the spans, decoded with go.opentelemetry.io/proto/otlp. It is test
// support: nothing in the product imports it.
package otlpsink

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	Service      string // the resource's service.name
	Name         string
	TraceID      string // hex
	SpanID       string // hex
	ParentSpanID string // hex, "" for a root span
	Kind         string // e.g. SPAN_KIND_SERVER
	Attrs        map[string]string
}

// Sink receives spans. Its zero value is not usable: call [Start].
type Sink struct {
	// URL is the sink's base URL, the value of OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	keep bool

	srv *http.Server
	ln  net.Listener

	mu      sync.Mutex
	spans   []Span
	count   int
	exports int
}

// Start listens on addr ("" for a free loopback port) and serves until
// Close. With keep it keeps the spans it receives ([Sink.Spans]); without,
// it only counts them (a benchmark's sink).
func Start(addr string, keep bool) (*Sink, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Sink{URL: "http://" + ln.Addr().String(), keep: keep, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", s.export)
	s.srv = &http.Server{Handler: mux}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the sink.
func (s *Sink) Close() error { return s.srv.Close() }

// Spans returns the spans received so far.
func (s *Sink) Spans() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Span(nil), s.spans...)
}

// Count returns how many spans and export requests were received.
func (s *Sink) Count() (spans, exports int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count, s.exports
}

func (s *Sink) export(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, fmt.Sprintf("not an OTLP protobuf trace export: %v", err), http.StatusBadRequest)
		return
	}
	var got []Span
	n := 0
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				n++
				if !s.keep {
					continue
				}
				got = append(got, Span{Service: service, Name: sp.GetName(), TraceID: hex.EncodeToString(sp.GetTraceId()),
					SpanID: hex.EncodeToString(sp.GetSpanId()), ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()),
					Kind: sp.GetKind().String(), Attrs: attrs(sp.GetAttributes())})
			}
		}
	}
	s.mu.Lock()
	s.spans = append(s.spans, got...)
	s.count += n
	s.exports++
	s.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// attrs flattens attributes to strings.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.GetKey()] = v.String()
		}
	}
	return m
}
