package a2a_test

import (
	"context"
	"strings"
	"testing"

	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// cardWith is a card fetched from https://agent.example whose interfaces
// are urls.
func cardWith(t *testing.T, urls ...string) *client.Card {
	t.Helper()
	var ifaces []string
	for _, u := range urls {
		ifaces = append(ifaces, `{"url":"`+u+`","protocolBinding":"JSONRPC","protocolVersion":"1.0"}`)
	}
	raw := `{"name":"Secure","version":"1","description":"d","capabilities":{"streaming":true},
 "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[],
 "supportedInterfaces":[` + strings.Join(ifaces, ",") + `]}`
	card, err := client.ParseCard([]byte(raw), "https://agent.example/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	return card
}

// An https card never sends the task (and the credential) over plain http:
// an http interface is refused even on an origin the agent's entry allows,
// and an https card with an https interface beside it uses that one
// (docs/design.md#secrets).
func TestHTTPSCardNeverUsesAPlainHTTPInterface(t *testing.T) {
	origins := []string{"http://agent.example", "https://api.example", "http://api.example"}
	for _, tt := range []struct {
		name  string
		urls  []string
		want  string // the interface used; "" when the card is refused
		extra []string
	}{
		{"http interface on the card's host", []string{"http://agent.example/a2a"}, "", origins},
		{"http interface on an allowed origin", []string{"http://api.example/a2a"}, "", origins},
		{"https interface on the card's origin", []string{"https://agent.example/a2a"}, "https://agent.example/a2a", nil},
		{"https interface on an allowed origin written without its port", []string{"https://api.example/a2a"}, "https://api.example/a2a", origins},
		{"http first, https second", []string{"http://api.example/a2a", "https://agent.example/a2a"}, "https://agent.example/a2a", origins},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.NewClientFromCard(context.Background(), cardWith(t, tt.urls...),
				client.Options{Credential: credentials.FromToken("test", secretToken), InterfaceOrigins: tt.extra})
			if tt.want == "" {
				if err == nil {
					_ = c.Close()
					t.Fatal("a client for an https card's plain-http interface")
				}
				if clienterr.KindOf(err) != clienterr.KindProtocol || !strings.Contains(err.Error(), "never downgrades https to http") {
					t.Fatalf("error %v (kind %v)", err, clienterr.KindOf(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.Endpoint(); got != tt.want {
				t.Fatalf("interface %s, want %s", got, tt.want)
			}
		})
	}
}
