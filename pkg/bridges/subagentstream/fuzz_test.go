package subagentstream_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

func FuzzParseLastEventID(f *testing.F) {
	for _, s := range []string{"", "0", "1", "42", " 7 ", "-1", "abc", "18446744073709551615", "18446744073709551616", "1e3", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := subagentstream.ParseLastEventID(s)
		if err != nil {
			return
		}
		trim := strings.TrimSpace(s)
		digits := strings.TrimLeft(trim, "0")
		switch {
		case trim == "" || digits == "":
			if n != 0 {
				t.Fatalf("%q parsed as %d, want 0", s, n)
			}
		case strconv.FormatUint(n, 10) != digits:
			t.Fatalf("%q parsed as %d", s, n)
		}
	})
}

func FuzzCustomEventSerialization(f *testing.F) {
	f.Add("subagent.text.delta", "del-1", "hello", "", "", int64(0))
	f.Add("subagent.artifact", "del-2", "", "notes.md", "remote_failed", int64(1<<40))
	f.Add("", "", "\x00\xff", "\u2028", "x", int64(-1))
	f.Fuzz(func(t *testing.T, kind, id, text, name, code string, size int64) {
		ev := delegation.DelegationEvent{
			RunID: "run", DelegationID: id, Kind: delegation.DelegationEventKind(kind), Delta: text, Text: text, Status: name,
			Artifact: &delegation.DelegationArtifact{ID: id, Name: name, SizeBytes: size},
			Error:    &delegation.DelegationError{Code: delegation.FailureCode(code), Message: text},
			Raw:      map[string]any{"k": text},
		}
		v := subagentstream.Value(ev, "run-x", true)
		c := agui.NewCustomEvent(kind, v, time.Unix(0, 0))
		if kind == "" {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("custom event invalid: %v", err)
		}
		b, err := c.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil || back["value"] == nil {
			t.Fatalf("round trip: %v %s", err, b)
		}
	})
}
