package a2a

import (
	"errors"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

var cardSeeds = []string{
	`{"name":"a","version":"1","supportedInterfaces":[{"url":"http://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
	`{"name":"a","version":"1","supportedInterfaces":[{"url":"/rel","protocolBinding":"HTTP+JSON"}],"capabilities":{"streaming":"yes"}}`,
	`{"name":"legacy","version":"0","protocolVersion":"0.3.0","url":"http://h/rpc","preferredTransport":"JSONRPC","securitySchemes":{"b":{"type":"http","scheme":"bearer"}}}`,
	`{"name":"a","version":"1","supportedInterfaces":[null,{"url":1},{"url":"http://h","protocolBinding":"GRPC"}]}`,
	`{"name":"a","version":"1","url":"http://h","additionalInterfaces":[{"url":"http://h2","transport":"HTTP+JSON"}],"security":[{"b":[]}]}`,
	`{"name":"a","version":"1","supportedInterfaces":[],"signatures":[{"protected":1}],"skills":[{"id":2}]}`,
	`{"a":1,"a":2}`, `[]`, `null`, `"x"`, `{`, ``, `{"name":"\ud800","version":"1e400"}`,
}

// FuzzCardIngestion: any bytes -> ParseCard never panics, and a successful
// parse yields a usable, fingerprinted card.
func FuzzCardIngestion(f *testing.F) {
	for _, s := range cardSeeds {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "http://127.0.0.1:9/.well-known/agent-card.json")
	}
	f.Fuzz(func(t *testing.T, raw []byte, source string) {
		card, err := ParseCard(raw, source)
		if err != nil {
			if !errors.Is(err, clienterr.ErrProtocol) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if card.Agent == nil || card.Fingerprint == "" || len(card.Agent.SupportedInterfaces) == 0 {
			t.Fatalf("accepted an unusable card: %+v", card)
		}
		for _, in := range card.Agent.SupportedInterfaces {
			if credentials.Origin(in.URL) == "" {
				t.Fatalf("accepted interface without an absolute URL: %q", in.URL)
			}
		}
	})
}

var eventSeeds = []string{
	`{"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`,
	`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"ok"}]}}}}`,
	`{"artifactUpdate":{"taskId":"t","append":true,"lastChunk":true,"artifact":{"artifactId":"a","parts":[{"text":"x"},{"data":{"k":1}},{"url":"http://f","mediaType":"text/plain"},{"raw":"AAE="}]}}}`,
	`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"task not found"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":7,"message":"?"}}`,
	`{"jsonrpc":"2.0","id":1,"result":null}`,
	`{"artifactUpdate":{"taskId":"t"}}`, `{"task":null}`, `{"task":{}}`, `{"statusUpdate":{"taskId":"t","status":{"state":"NOPE"}}}`,
	`{"artifactUpdate":{"taskId":"t","artifact":{"parts":[{}]}}}`, `{"message":{"parts":[null]}}`,
	`{}`, `[]`, `null`, `{`, ``,
}

// FuzzEventDecoding: any bytes -> DecodeEvent never panics; success means
// a valid event.
func FuzzEventDecoding(f *testing.F) {
	for _, s := range eventSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := DecodeEvent(raw)
		if err != nil {
			if clienterr.KindOf(err) == 0 {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if verr := ValidateEvent(ev); verr != nil {
			t.Fatalf("decoded an invalid event: %v", verr)
		}
		_, _ = StateOf(ev)
	})
}
