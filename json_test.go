package agentadaptor_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
)

func TestCustomPayloadsAreNamedInJSON(t *testing.T) {
	b, err := json.Marshal(agentadaptor.StreamPayload{Kind: agentadaptor.KindCustom, Name: "scripted.init"})
	if err != nil || !strings.Contains(string(b), `"kind":"custom"`) {
		t.Fatalf("%s %v", b, err)
	}
	for _, in := range []string{`{"kind":"custom"}`, `{"kind":""}`} {
		var p agentadaptor.StreamPayload
		if err := json.Unmarshal([]byte(in), &p); err != nil || p.Kind != agentadaptor.KindCustom {
			t.Errorf("%s: %q %v", in, p.Kind, err)
		}
	}
	var p agentadaptor.StreamPayload
	if err := json.Unmarshal([]byte(`{"kind":"text.delta"}`), &p); err != nil || p.Kind != agentadaptor.KindTextDelta {
		t.Errorf("text.delta: %q %v", p.Kind, err)
	}
}

func TestRawStreamsAreTextInJSON(t *testing.T) {
	in := agentadaptor.RawStreams{Stdout: []byte("{\"type\":\"init\"}\n"), Stderr: []byte{0xff, 0xfe, 'x'}, StderrTruncated: true}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"stdout":"{\"type\":\"init\"}\n"`) || !strings.Contains(string(b), `"stderr_base64":"//54"`) {
		t.Fatalf("JSON %s", b)
	}
	var out agentadaptor.RawStreams
	if err := json.Unmarshal(b, &out); err != nil || string(out.Stdout) != string(in.Stdout) || string(out.Stderr) != string(in.Stderr) || !out.StderrTruncated {
		t.Fatalf("round trip %+v %v", out, err)
	}
}

func TestFileSessionStoreOutlivesTheProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "sessions.json")
	ctx := context.Background()
	if err := agentadaptor.NewFileSessionStore(path).Save(ctx, "claude", "chat-1", "sess-1"); err != nil {
		t.Fatal(err)
	}
	// A new store over the same file (another process) finds it.
	s := agentadaptor.NewFileSessionStore(path)
	if id, ok, err := s.Load(ctx, "claude", "chat-1"); err != nil || !ok || id != "sess-1" {
		t.Fatalf("Load = %q %v %v", id, ok, err)
	}
	if _, ok, _ := s.Load(ctx, "codex", "chat-1"); ok {
		t.Fatal("sessions are per adapter")
	}
}
