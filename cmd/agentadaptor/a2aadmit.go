package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/seed0634/agentadaptor/internal/httpguard"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// admitA2A puts httpguard's admission in front of the A2A bridge
// (docs/design.md#secrets): Host allowlist (DNS rebinding), cross-origin
// protection (Origin, Sec-Fetch-Site: a web page cannot post to the agent),
// bearer tokens (the principal goes into the request's context, where the
// bridge reads it as the owner of tasks) and JSON-only bodies. Refusals
// keep their HTTP status (403, 401 with WWW-Authenticate, 415) and carry
// the error shape of the binding the request was for, with hints that name
// this command's flags: a JSON-RPC error object (id null: the body is not
// read) on the JSON-RPC path, a google.rpc.Status elsewhere.
func admitA2A(g *httpguard.Guard, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, err := g.Check(r)
		if err == nil {
			next.ServeHTTP(w, r.WithContext(httpguard.WithPrincipal(r.Context(), principal)))
			return
		}
		refusal := refusalOf(err)
		if refusal.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentadaptor a2a serve"`)
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(refusal.status)
		v1 := map[string]any{
			"code": refusal.status, "status": refusal.grpcStatus, "message": refusal.msg,
			"details": []any{map[string]any{
				"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": refusal.reason, "domain": "a2a-protocol.org",
			}},
		}
		var body any = map[string]any{"error": v1}
		p := strings.TrimSuffix(r.URL.Path, "/")
		switch {
		case p == a2abridge.PathJSONRPC:
			body = map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": refusal.rpcCode, "message": refusal.msg}}
		case strings.HasPrefix(p, a2abridge.PathREST+"/v1/") || strings.HasPrefix(r.Header.Get("A2A-Version"), "0.3"):
			// A 0.3 HTTP+JSON request: the 0.3 error object, with the 1.0
			// one beside it (docs/design.md#event-mapping).
			body = map[string]any{"code": refusal.rpcCode, "message": refusal.msg, "error": v1}
		}
		_ = json.NewEncoder(w).Encode(body)
	})
}

// refusal is how an admission error is answered.
type refusal struct {
	status             int
	rpcCode            int
	grpcStatus, reason string
	msg                string
}

func refusalOf(err error) refusal {
	switch {
	case errors.Is(err, httpguard.ErrHost):
		return refusal{http.StatusForbidden, -31403, "PERMISSION_DENIED", "UNAUTHORIZED",
			"this server does not answer to this Host name (DNS rebinding protection); if it is yours, add --allowed-host NAME or set --public-url"}
	case errors.Is(err, httpguard.ErrUnauthorized):
		return refusal{http.StatusUnauthorized, -31401, "UNAUTHENTICATED", "UNAUTHENTICATED",
			"authentication required: send Authorization: Bearer <token> with a token this server was started with (see the card's securitySchemes)"}
	case errors.Is(err, httpguard.ErrContentType):
		return refusal{http.StatusUnsupportedMediaType, -32005, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED",
			"request bodies must be Content-Type: application/json"}
	}
	return refusal{http.StatusForbidden, -31403, "PERMISSION_DENIED", "UNAUTHORIZED",
		"cross-origin requests are refused: a web page cannot call the local agent"}
}

// grpcAdmission authenticates gRPC calls with the guard's bearer tokens:
// the "authorization" metadata entry is checked as the HTTP header would
// be, and the principal goes into the call's context. Host and Origin
// checks do not apply: the gRPC listener speaks HTTP/2 without TLS (h2c),
// which browsers do not, so no web page can reach it. Without tokens every
// call is admitted (the listener is then loopback only).
func grpcAdmission(g *httpguard.Guard) []grpc.ServerOption {
	admit := func(ctx context.Context) (context.Context, error) {
		if !g.AuthRequired() {
			return ctx, nil
		}
		md, _ := metadata.FromIncomingContext(ctx)
		r := &http.Request{Method: http.MethodGet, Host: "localhost", URL: &url.URL{Path: "/grpc"}, Header: http.Header{}}
		if v := md.Get("authorization"); len(v) > 0 {
			r.Header.Set("Authorization", v[0])
		}
		principal, err := g.Check(r)
		if err != nil {
			return nil, status.Error(codes.Unauthenticated, fmt.Sprintf("authentication required: send metadata authorization: Bearer <token> (%v)", httpguard.ErrUnauthorized))
		}
		return httpguard.WithPrincipal(ctx, principal), nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			ctx, err := admit(ctx)
			if err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ctx, err := admit(ss.Context())
			if err != nil {
				return err
			}
			return h(srv, &admittedStream{ServerStream: ss, ctx: ctx})
		}),
	}
}

// admittedStream carries the admitted context of a streaming call.
type admittedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *admittedStream) Context() context.Context { return s.ctx }
