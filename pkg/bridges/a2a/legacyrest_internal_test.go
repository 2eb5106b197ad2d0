package a2a

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An error event inside a 0.3 HTTP+JSON stream becomes an SSE "error"
// event with the 0.3 body; other events pass unchanged.
func TestV03StreamErrorEvent(t *testing.T) {
	rec := httptest.NewRecorder()
	w := &v03REST{w: rec}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	task := `data: {"task":{"id":"t1","status":{"state":"TASK_STATE_WORKING"}}}` + "\n\n"
	errEv := `data: {"error":{"code":404,"status":"NOT_FOUND","message":"gone","details":[{"reason":"TASK_NOT_FOUND"}]}}` + "\n\n"
	// Written in pieces that split the events.
	all := task + errEv
	for _, piece := range []string{all[:10], all[10 : len(task)+5], all[len(task)+5:]} {
		if _, err := w.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	w.finish()
	out := rec.Body.String()
	if !strings.HasPrefix(out, task) {
		t.Fatalf("the task event changed: %q", out)
	}
	rest := strings.TrimPrefix(out, task)
	data, ok := strings.CutPrefix(rest, "event: error\ndata: ")
	if !ok || !strings.HasSuffix(data, "\n\n") {
		t.Fatalf("error event %q", rest)
	}
	var body struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &body); err != nil || body.Code != -32001 || body.Message != "gone" || len(body.Error) == 0 {
		t.Errorf("error event data %q", data)
	}
}
