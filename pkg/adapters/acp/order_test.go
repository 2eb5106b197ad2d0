package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	sdk "github.com/coder/acp-go-sdk"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// updateLines are n session/update notifications (text chunks) as an
// agent writes them, followed by extra lines.
func updateLines(n int, extra ...string) []byte {
	var b bytes.Buffer
	for i := range n {
		note := sdk.SessionNotification{SessionId: "s", Update: sdk.UpdateAgentMessageText(fmt.Sprintf("c%d ", i))}
		params, _ := json.Marshal(note)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"session/update","params":%s}`+"\n", params)
	}
	for _, l := range extra {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

// A permission request whose handler runs before the updates read ahead
// of it are mapped (the ACP SDK runs each request on a goroutine of its
// own) waits for them: the text stays before the tool call. The synctest
// bubble makes the interleaving certain: the handler runs first, and the
// updates are mapped only once it is blocked (or done).
func TestPermissionWaitsForEarlierUpdates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		var mu sync.Mutex
		var seq []string
		c := &conversation{tools: map[string]*toolState{}, order: newUpdateOrder(), interrupt: make(chan struct{})}
		c.emit = func(p agentadaptor.StreamPayload) {
			mu.Lock()
			defer mu.Unlock()
			seq = append(seq, string(p.Kind)+p.Name+p.Delta)
		}
		// The connection read n updates, then the request.
		req := `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{}}`
		if _, err := io.Copy(io.Discard, c.order.reader(bytes.NewReader(updateLines(n, req)))); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = client{c}.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: "s",
				ToolCall: sdk.ToolCallUpdate{ToolCallId: "t1", Title: new("Shell"), Kind: sdk.Ptr(sdk.ToolKindExecute)},
				Options:  []sdk.PermissionOption{{Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "no"}}})
		}()
		synctest.Wait() // the handler is waiting for the updates (or, broken, has answered)
		for i := range n {
			_ = client{c}.SessionUpdate(ctx, sdk.SessionNotification{SessionId: "s", Update: sdk.UpdateAgentMessageText(fmt.Sprintf("c%d ", i))})
		}
		<-done
		got := strings.Join(seq, "|")
		want := "text.start|text.deltac0 |text.deltac1 |text.deltac2 |text.deltac3 |text.deltac4 |text.end|tool_call.start|tool_call.args{}|tool_call.end|acp.permission"
		if got != want {
			t.Errorf("payloads\n got %s\nwant %s", got, want)
		}
	})
}

// The reader hands the connection at most maxUnmapped session updates
// ahead of the mapping (the ACP SDK closes the connection when its queue
// of 1024 notifications overflows); each mapped update lets one more
// through, and close releases the reader.
func TestReaderHoldsBackUnmappedUpdates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newUpdateOrder()
		r := o.reader(bytes.NewReader(updateLines(maxUnmapped + 10)))
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, r)
			done <- err
		}()
		read := func() uint64 {
			o.mu.Lock()
			defer o.mu.Unlock()
			return o.read
		}
		synctest.Wait()
		if got := read(); got != maxUnmapped {
			t.Fatalf("%d updates handed over with none mapped, want %d", got, maxUnmapped)
		}
		o.mapped()
		synctest.Wait()
		if got := read(); got != maxUnmapped+1 {
			t.Fatalf("%d updates handed over after one was mapped, want %d", got, maxUnmapped+1)
		}
		o.close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := read(); got != maxUnmapped+10 {
			t.Errorf("%d updates handed over after close, want all %d", got, maxUnmapped+10)
		}
	})
}

// Lines the SDK will not deliver as session updates are not counted: a
// request, a response, "id": null, a malformed update.
func TestIsUpdate(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{string(bytes.TrimSpace(updateLines(1))), true},
		{`{"jsonrpc":"2.0","id":null,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`, true},
		{`{"jsonrpc":"2.0","id":3,"method":"session/update","params":{}}`, false},
		// An unknown kind is delivered (and mapped to nothing).
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"no_such_update"}}}`, true},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":7}}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":"session/update"}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"note":"session/update"}}`, false},
	} {
		if got := isUpdate([]byte(tc.line)); got != tc.want {
			t.Errorf("isUpdate(%s) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
