package a2a_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

const validCard = `{"name":"Research","version":"1.2.0","description":"d",
 "capabilities":{"streaming":true},
 "supportedInterfaces":[{"url":"http://127.0.0.1:9001/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
 "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`

func TestFingerprintStableAcrossKeyOrder(t *testing.T) {
	reordered := `{
	  "skills": [], "defaultOutputModes": ["text/plain"], "defaultInputModes": ["text/plain"],
	  "supportedInterfaces": [{"protocolVersion": "1.0", "protocolBinding": "JSONRPC", "url": "http://127.0.0.1:9001/a2a"}],
	  "capabilities": {"streaming": true}, "description": "d", "version": "1.2.0", "name": "Research"
	}`
	a, err := client.ParseCard([]byte(validCard), "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.ParseCard([]byte(reordered), "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint != b.Fingerprint || len(a.Fingerprint) != 64 || strings.ToLower(a.Fingerprint) != a.Fingerprint {
		t.Fatalf("fingerprints differ or malformed: %s vs %s", a.Fingerprint, b.Fingerprint)
	}
	c, _ := client.ParseCard([]byte(strings.Replace(validCard, "1.2.0", "1.2.1", 1)), "")
	if c.Fingerprint == a.Fingerprint {
		t.Fatal("different cards share a fingerprint")
	}
}

func TestParseCardMalformed(t *testing.T) {
	cases := []struct {
		name, doc, field string
	}{
		{"not json", `{"name":`, ""},
		{"array", `[]`, ""},
		{"null", `null`, ""},
		{"missing name", strings.Replace(validCard, `"name":"Research",`, "", 1), "name"},
		{"empty name", strings.Replace(validCard, `"name":"Research"`, `"name":"  "`, 1), "name"},
		{"name not a string", strings.Replace(validCard, `"name":"Research"`, `"name":42`, 1), "name"},
		{"missing version", strings.Replace(validCard, `"version":"1.2.0",`, "", 1), "version"},
		{"no interfaces", `{"name":"x","version":"1"}`, "supportedInterfaces"},
		{"interfaces wrong type", `{"name":"x","version":"1","supportedInterfaces":"http://x"}`, "supportedInterfaces"},
		{"only grpc", strings.Replace(validCard, `"JSONRPC"`, `"GRPC"`, 1), "supportedInterfaces"},
		{"relative url without source", strings.Replace(validCard, "http://127.0.0.1:9001/a2a", "/a2a", 1), "supportedInterfaces"},
		{"unsupported major version", strings.Replace(validCard, `"protocolVersion":"1.0"`, `"protocolVersion":"7.0"`, 1), "supportedInterfaces"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.ParseCard([]byte(tc.doc), "")
			if !errors.Is(err, clienterr.ErrProtocol) {
				t.Fatalf("want ErrProtocol, got %v", err)
			}
			var ce *client.CardError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("want CardError on %q, got %v", tc.field, err)
			}
			if tc.field != "" && !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error does not name the field: %v", err)
			}
		})
	}
}

func TestParseCardLenientOptionalFields(t *testing.T) {
	// securitySchemes in the flat OpenAPI shape (as @a2a-js/sdk emits it),
	// an odd capabilities member, a broken skills list and a vendor field.
	doc := strings.Replace(validCard, `"capabilities":{"streaming":true}`,
		`"capabilities":{"streaming":true,"pushNotifications":"sometimes"},
		 "securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},
		 "x-vendor":{"a":1}`, 1)
	doc = strings.Replace(doc, `"skills":[]`, `"skills":"all of them"`, 1)
	c, err := client.ParseCard([]byte(doc), "")
	if err != nil {
		t.Fatalf("lenient card rejected: %v", err)
	}
	if !c.Streaming() || c.Name() != "Research" {
		t.Fatalf("usable fields lost: %+v", c.Agent)
	}
	joined := strings.Join(c.Ignored, "\n")
	for _, want := range []string{"securitySchemes", "capabilities.pushNotifications", "skills", "x-vendor"} {
		if !strings.Contains(joined, want) {
			t.Errorf("Ignored does not mention %s: %q", want, c.Ignored)
		}
	}
}

func TestParseCardV03AndRelativeURLs(t *testing.T) {
	doc := `{"name":"legacy","version":"0.1","protocolVersion":"0.3.0","url":"/a2a/jsonrpc",
	 "capabilities":{"streaming":true},"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},
	 "additionalInterfaces":[{"url":"http://agent.example:8080/a2a/rest","transport":"HTTP+JSON"}]}`
	c, err := client.ParseCard([]byte(doc), "http://agent.example:8080/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Legacy || c.ProtocolVersion != "0.3.0" {
		t.Fatalf("legacy=%v version=%s", c.Legacy, c.ProtocolVersion)
	}
	ifs := c.Agent.SupportedInterfaces
	if len(ifs) != 2 || ifs[0].URL != "http://agent.example:8080/a2a/jsonrpc" || ifs[0].ProtocolBinding != a2a.TransportProtocolJSONRPC {
		t.Fatalf("interfaces = %+v", ifs[0])
	}
}

func TestFetchCardFromFake(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true})
	c, err := client.FetchCard(testCtx(t), f.CardURL())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := client.Fingerprint(f.CardBytes())
	if c.Fingerprint != want || c.Name() != "research" || c.Origin() != credentials.Origin(f.URL()) || c.FetchedAt.IsZero() {
		t.Fatalf("card = %+v", c)
	}
}

func TestFetchCardErrors(t *testing.T) {
	leakCheck(t)
	bad := fakea2a.New(t, fakea2a.Options{CardBody: []byte(`{"name": "x", "version": "1"`)})
	_, err := client.FetchCard(testCtx(t), bad.CardURL())
	if !errors.Is(err, clienterr.ErrProtocol) {
		t.Fatalf("malformed card: want ErrProtocol, got %v", err)
	}
	_, err = client.FetchCard(testCtx(t), bad.URL()+"/no-card-here")
	var e *clienterr.Error
	if !errors.As(err, &e) || e.Kind != clienterr.KindUnavailable || e.Status != 404 {
		t.Fatalf("404: want KindUnavailable/404, got %v", err)
	}
	protected := fakea2a.New(t, fakea2a.Options{RequireToken: "t0k3n", ProtectCard: true})
	_, err = client.FetchCard(testCtx(t), protected.CardURL())
	if !errors.Is(err, clienterr.ErrUnauthorized) {
		t.Fatalf("protected card: want ErrUnauthorized, got %v", err)
	}
	down := fakea2a.New(t, fakea2a.Options{})
	url := down.CardURL()
	down.Close()
	_, err = client.FetchCard(testCtx(t), url)
	if !errors.Is(err, clienterr.ErrUnavailable) {
		t.Fatalf("server down: want ErrUnavailable, got %v", err)
	}
	_, err = client.FetchCard(testCtx(t), "ftp://example/card")
	if !errors.Is(err, clienterr.ErrRejected) {
		t.Fatalf("bad URL: want ErrRejected, got %v", err)
	}
}

func TestCardResolverCache(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{})
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	r := client.NewCardResolver(client.CardResolverOptions{TTL: time.Minute, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	ctx := testCtx(t)
	cardFetches := func() int { return len(f.RequestsFor("AgentCard")) }

	var wg sync.WaitGroup
	cards := make([]*client.Card, 8)
	for i := range cards {
		wg.Go(func() {
			c, err := r.Resolve(ctx, f.CardURL())
			if err != nil {
				t.Error(err)
			}
			cards[i] = c
		})
	}
	wg.Wait()
	if n := cardFetches(); n != 1 {
		t.Fatalf("concurrent resolves fetched %d times, want 1", n)
	}
	for _, c := range cards[1:] {
		if c != cards[0] {
			t.Fatal("resolvers got different cards")
		}
	}
	now.Add(int64(30 * time.Second))
	if _, err := r.Resolve(ctx, f.CardURL()); err != nil || cardFetches() != 1 {
		t.Fatalf("fresh entry refetched: %v %d", err, cardFetches())
	}
	now.Add(int64(31 * time.Second))
	if _, err := r.Resolve(ctx, f.CardURL()); err != nil || cardFetches() != 2 {
		t.Fatalf("expired entry not refetched: %v %d", err, cardFetches())
	}
	r.Invalidate(f.CardURL())
	if _, err := r.Resolve(ctx, f.CardURL()); err != nil || cardFetches() != 3 {
		t.Fatalf("invalidated entry not refetched: %v %d", err, cardFetches())
	}
	// A cancelled caller does not poison the cache.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Refresh(cctx, f.CardURL()); !errors.Is(err, clienterr.ErrCanceled) {
		t.Fatalf("cancelled refresh: %v", err)
	}
	if _, err := r.Resolve(ctx, f.CardURL()); err != nil {
		t.Fatal(err)
	}
}
