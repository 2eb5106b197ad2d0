package a2a_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"
)

// fullCard has every top-level field of a v1.0 Agent Card, and one field
// this client does not know.
const fullCard = `{
 "name": "Research", "description": "Finds things.", "version": "1.2.0",
 "supportedInterfaces": [{"url": "http://127.0.0.1:9001/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
 "provider": {"organization": "Example", "url": "https://example.com"},
 "documentationUrl": "https://example.com/docs", "iconUrl": "https://example.com/icon.png",
 "capabilities": {"streaming": true, "pushNotifications": false},
 "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
 "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
 "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain", "text/markdown"],
 "skills": [{"id": "search", "name": "Search", "description": "Searches.", "tags": ["web"]}],
 "signatures": [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2ln"}],
 "x-vendor-extension": {"tier": "gold"}
}`

// The card fingerprint covers the whole card (docs/design.md#remote-agent-specs:
// lowercase hex SHA-256 of the RFC 8785 canonical JSON): changing any
// top-level field, deep or shallow, adding or removing one changes it, so
// an audit record's card_fingerprint identifies exactly the card the host
// talked to (docs/design.md#guarantees 14).
func TestFingerprintCoversEveryField(t *testing.T) {
	var card map[string]json.RawMessage
	if err := json.Unmarshal([]byte(fullCard), &card); err != nil {
		t.Fatal(err)
	}
	fp := func(doc map[string]json.RawMessage) string {
		t.Helper()
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		s, err := client.Fingerprint(b)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := fp(card)
	parsed, err := client.ParseCard([]byte(fullCard), "")
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Fingerprint != base {
		t.Fatalf("ParseCard's fingerprint %s differs from Fingerprint's %s", parsed.Fingerprint, base)
	}
	// A change deep inside each field, and of its value as a whole.
	deep := map[string]string{
		"name":                 `"Research 2"`,
		"description":          `"Finds other things."`,
		"version":              `"1.2.1"`,
		"supportedInterfaces":  `[{"url": "http://127.0.0.1:9002/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]`,
		"provider":             `{"organization": "Other", "url": "https://example.com"}`,
		"documentationUrl":     `"https://example.com/other-docs"`,
		"iconUrl":              `"https://example.com/other.png"`,
		"capabilities":         `{"streaming": false, "pushNotifications": false}`,
		"securitySchemes":      `{"bearer": {"httpAuthSecurityScheme": {"scheme": "Basic"}}}`,
		"securityRequirements": `[{"schemes": {"bearer": {"list": ["read"]}}}]`,
		"defaultInputModes":    `["application/json"]`,
		"defaultOutputModes":   `["text/plain"]`,
		"skills":               `[{"id": "search", "name": "Search", "description": "Searches.", "tags": ["news"]}]`,
		"signatures":           `[{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "b3RoZXI"}]`,
		"x-vendor-extension":   `{"tier": "silver"}`,
	}
	keys := slices.Sorted(maps.Keys(card))
	if !slices.Equal(keys, slices.Sorted(maps.Keys(deep))) {
		t.Fatalf("the test changes %v, the card has %v", slices.Sorted(maps.Keys(deep)), keys)
	}
	seen := map[string]string{base: "the card"}
	check := func(what string, doc map[string]json.RawMessage) {
		t.Helper()
		got := fp(doc)
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: same fingerprint as %s", what, prev)
		}
		seen[got] = what
	}
	for _, k := range keys {
		changed := maps.Clone(card)
		changed[k] = json.RawMessage(deep[k])
		check("changing "+k, changed)
		other := maps.Clone(card)
		other[k] = json.RawMessage(`null`)
		check(k+" set to null", other)
		removed := maps.Clone(card)
		delete(removed, k)
		check("removing "+k, removed)
	}
	added := maps.Clone(card)
	added["x-another"] = json.RawMessage(`true`)
	check("adding a field", added)
}
