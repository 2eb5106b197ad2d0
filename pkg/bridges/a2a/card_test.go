package a2a_test

import (
	"encoding/json"
	"net/http"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"google.golang.org/protobuf/encoding/protojson"
)

// strictV1 parses a card the way a strict A2A 1.0 reader does (the TCK's
// CARD-STRUCT-001 validates against the 1.0 schema): ProtoJSON into the
// 1.0 AgentCard message, unknown fields refused.
func strictV1(b []byte) error {
	return protojson.UnmarshalOptions{DiscardUnknown: false}.Unmarshal(b, &a2apb.AgentCard{})
}

// A client that asks for A2A 1.0 gets the 1.0 card, which a strict 1.0
// reader accepts; every other client (no A2A-Version means 0.3) gets the
// 1.0/0.3 union that 0.3 clients need (docs/design.md#event-mapping).
func TestCardByRequestedVersion(t *testing.T) {
	for _, bearer := range []bool{false, true} {
		env := startBridge(t, "- say: hi\n", a2abridge.Exposure{}, func(c *a2abridge.Config) { c.Card.BearerAuth = bearer })
		st, uh, union := raw(t, "GET", env.cardURL(), nil, "")
		if st != 200 {
			t.Fatalf("card: %d", st)
		}
		if strictV1(union) == nil {
			t.Error("the union card passes a strict 1.0 reader: the test cannot tell the forms apart")
		}
		for name, fetch := range map[string]func() (int, http.Header, []byte){
			"header": func() (int, http.Header, []byte) {
				return raw(t, "GET", env.cardURL(), map[string]string{"A2A-Version": "1.0"}, "")
			},
			"query parameter": func() (int, http.Header, []byte) { return raw(t, "GET", env.cardURL()+"?A2A-Version=1.0", nil, "") },
		} {
			st, h, v1 := fetch()
			if st != 200 {
				t.Fatalf("%s: %d", name, st)
			}
			if err := strictV1(v1); err != nil {
				t.Errorf("bearer %v, version by %s: a strict 1.0 reader refuses the card: %v\n%s", bearer, name, err, v1)
			}
			var doc map[string]any
			if err := json.Unmarshal(v1, &doc); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"url", "preferredTransport", "protocolVersion", "additionalInterfaces"} {
				if _, ok := doc[k]; ok {
					t.Errorf("the 1.0 card has the 0.3 field %q", k)
				}
			}
			if ifs, _ := doc["supportedInterfaces"].([]any); len(ifs) != 4 {
				t.Errorf("the 1.0 card lists %d interfaces, want 4 (1.0 and 0.3)", len(ifs))
			}
			if h.Get("Vary") != "A2A-Version" || uh.Get("Vary") != "A2A-Version" || h.Get("ETag") == uh.Get("ETag") {
				t.Errorf("Vary %q/%q, ETags %s/%s: caches must tell the forms apart", h.Get("Vary"), uh.Get("Vary"), h.Get("ETag"), uh.Get("ETag"))
			}
		}
		// A 0.3 client (no header, or A2A-Version 0.3) keeps the union.
		if _, _, b := raw(t, "GET", env.cardURL(), map[string]string{"A2A-Version": "0.3"}, ""); string(b) != string(union) {
			t.Error("A2A-Version 0.3 does not get the union card")
		}
	}
}
