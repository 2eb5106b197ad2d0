package relaybench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The bare relay: the floor any A2A -> AG-UI relay pays per chunk. For each
// POST /agui (a RunAgentInput) it sends the last user message to the
// remote as an A2A 1.0 JSON-RPC SendStreamingMessage, reads the remote's SSE
// stream with a plain line reader, decodes each event with encoding/json,
// and for each artifact text part re-encodes one AG-UI CUSTOM
// subagent.text.delta event, writes it as one SSE frame and flushes. It
// opens the stream with RUN_STARTED and ends it with RUN_FINISHED when the
// task reaches a terminal state (RUN_ERROR otherwise). Nothing else: no
// parent process, no MCP, no bus, no mux, no replay, no policy.
//
// A task text with "fanout=D" makes it a fan-out relay: it sends D such
// requests at once (the text without fanout=, plus " stream=j"), relays
// all of them into the one response (a frame at a time, each flushed),
// ends each with a CUSTOM subagent.finished and the run with RUN_FINISHED
// when all are completed.

// bareInput is the part of a RunAgentInput the bare relay reads.
type bareInput struct {
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// a2aStreamEvent is the part of an A2A 1.0 stream response the relay reads.
type a2aStreamEvent struct {
	Result struct {
		ArtifactUpdate *struct {
			Artifact struct {
				ArtifactID string `json:"artifactId"`
				Parts      []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"artifact"`
		} `json:"artifactUpdate"`
		StatusUpdate *struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"statusUpdate"`
		Task *struct {
			ID string `json:"id"`
		} `json:"task"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// bareDelta is the AG-UI event the bare relay writes per chunk.
type bareDelta struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Value struct {
		RunID        string `json:"runId"`
		DelegationID string `json:"delegationId"`
		RemoteTaskID string `json:"remoteTaskId,omitempty"`
		MessageID    string `json:"messageId"`
		Delta        string `json:"delta"`
	} `json:"value"`
}

// NewBareRelay returns the bare relay's handler; remote is the remote's
// base URL (its 1.0 JSON-RPC endpoint is remote + "/jsonrpc").
func NewBareRelay(remote string) http.Handler {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, DisableCompression: true}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("POST /agui", func(w http.ResponseWriter, r *http.Request) {
		var in bareInput
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var text string
		for _, m := range in.Messages {
			if m.Role == "user" {
				_ = json.Unmarshal(m.Content, &text)
			}
		}
		fanout := 0
		if m := fanoutParam.FindStringSubmatchIndex(text); m != nil {
			fanout, _ = strconv.Atoi(text[m[2]:m[3]])
			text = strings.TrimSpace(text[:m[0]] + text[m[1]:])
		}
		fl, _ := w.(http.Flusher)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		var mu sync.Mutex // one frame at a time (fan-out streams share the response)
		bw := bufio.NewWriterSize(w, 4096)
		id, headerOut := 0, false
		frame := func(data []byte) {
			mu.Lock()
			defer mu.Unlock()
			if !headerOut {
				w.WriteHeader(http.StatusOK)
				headerOut = true
			}
			id++
			bw.WriteString("id: ")
			bw.WriteString(strconv.Itoa(id))
			bw.WriteString("\ndata: ")
			bw.Write(data)
			bw.WriteString("\n\n")
			_ = bw.Flush()
			if fl != nil {
				fl.Flush()
			}
		}
		if fanout < 1 {
			// One remote stream, as in the one-delegation levels.
			resp, err := bareRequest(r.Context(), client, remote, text)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			frame(fmt.Appendf(nil, `{"type":"RUN_STARTED","threadId":%q,"runId":%q}`, in.ThreadID, in.RunID))
			if err := bareRelay(resp, in.RunID, "del-"+newID(), frame); err != nil {
				frame(fmt.Appendf(nil, `{"type":"RUN_ERROR","message":%q}`, err.Error()))
				return
			}
			frame(fmt.Appendf(nil, `{"type":"RUN_FINISHED","threadId":%q,"runId":%q}`, in.ThreadID, in.RunID))
			return
		}
		// Fan-out: fanout remote streams at once (task text "... stream=j"),
		// each relayed into this one response; a CUSTOM subagent.finished
		// ends each, RUN_FINISHED all of them.
		frame(fmt.Appendf(nil, `{"type":"RUN_STARTED","threadId":%q,"runId":%q}`, in.ThreadID, in.RunID))
		errs := make([]error, fanout)
		var wg sync.WaitGroup
		for j := range fanout {
			wg.Go(func() {
				del := "del-" + newID()
				resp, err := bareRequest(r.Context(), client, remote, fmt.Sprintf("%s stream=%d", text, j))
				if err != nil {
					errs[j] = err
					return
				}
				defer resp.Body.Close()
				if errs[j] = bareRelay(resp, in.RunID, del, frame); errs[j] == nil {
					frame(fmt.Appendf(nil, `{"type":"CUSTOM","name":"subagent.finished","value":{"runId":%q,"delegationId":%q}}`, in.RunID, del))
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			frame(fmt.Appendf(nil, `{"type":"RUN_ERROR","message":%q}`, err.Error()))
			return
		}
		frame(fmt.Appendf(nil, `{"type":"RUN_FINISHED","threadId":%q,"runId":%q}`, in.ThreadID, in.RunID))
	})
	return mux
}

// fanoutParam is the bare relay's fan-out request in the task text.
var fanoutParam = regexp.MustCompile(`\bfanout=(\d+)`)

// bareRequest sends text to the remote as SendStreamingMessage.
func bareRequest(ctx context.Context, client *http.Client, remote, text string) (*http.Response, error) {
	req, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
		"params": map[string]any{"message": map[string]any{
			"messageId": newID(), "role": "ROLE_USER", "parts": []map[string]string{{"text": text}},
		}},
	})
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, remote+"/jsonrpc", bytes.NewReader(req))
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	hreq.Header.Set("A2A-Version", "1.0")
	return client.Do(hreq)
}

// bareRelay reads one remote stream and writes a frame per artifact text
// part until the task is completed (nil) or fails (an error).
func bareRelay(resp *http.Response, runID, delegationID string, frame func([]byte)) error {
	var out bareDelta
	out.Type, out.Name = "CUSTOM", "subagent.text.delta"
	out.Value.RunID, out.Value.DelegationID = runID, delegationID
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	var line []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return errors.New("remote stream ended without a terminal state")
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		line = line[:0]
		if !ok {
			continue
		}
		var ev a2aStreamEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			continue
		}
		switch res := ev.Result; {
		case ev.Error != nil:
			return errors.New(ev.Error.Message)
		case res.Task != nil:
			out.Value.RemoteTaskID = res.Task.ID
		case res.ArtifactUpdate != nil:
			out.Value.MessageID = res.ArtifactUpdate.Artifact.ArtifactID
			for _, p := range res.ArtifactUpdate.Artifact.Parts {
				out.Value.Delta = p.Text
				b, _ := json.Marshal(&out)
				frame(b)
			}
		case res.StatusUpdate != nil:
			switch st := res.StatusUpdate.Status.State; st {
			case "TASK_STATE_COMPLETED":
				return nil
			case "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED":
				return errors.New(st)
			}
		}
	}
}

// ServeBare runs the bare relay on addr until ctx ends; ready receives the
// listening URL.
func ServeBare(ctx context.Context, addr, remote string, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: NewBareRelay(remote), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	ready("http://" + ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
