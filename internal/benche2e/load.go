package benche2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stream describes what one delegation streams: the remote reads it from
// the task text (bench/e2e/remote.mjs).
type Stream struct {
	Chunks   int
	Interval time.Duration
	Size     int
}

// Objective is the task text that makes the remote stream s.
func (s Stream) Objective() string {
	return fmt.Sprintf("chunks=%d interval_ms=%d size=%d", s.Chunks, s.Interval.Milliseconds(), s.Size)
}

// RunStats is what the load client saw of one delegation (one POST /agui).
type RunStats struct {
	// Lat and Steady are relay latencies in ns (remote stamp -> frame read),
	// Steady without the stream's first and last chunk.
	Lat, Steady []int64
	// FirstChunk is the time from sending the request to the first chunk.
	FirstChunk time.Duration
	// Marks are the times from sending the request to the first frame of
	// each stage of a project run (0 when it never came): RUN_STARTED (the
	// host admitted the run and started the parent process) and
	// subagent.started (the parent process is up, has its MCP session and
	// called the tool, and the host began the delegation). The parent's
	// TOOL_CALL_START is no mark: it travels through the parent's stdout
	// and usually arrives together with subagent.started.
	Marks      [numMarks]time.Duration
	Elapsed    time.Duration
	Chunks     int // distinct chunks received
	Duplicates int
	Lost       int // chunks never received
	// Terminal is true when the stream ended with its success terminal
	// event(s) (RUN_FINISHED; for the project also subagent.finished).
	Terminal bool
	Err      error
	// Diag says why a run without an error has no terminal: its frame
	// count and the types of its last frames.
	Diag string
	// Follower is what a client following the run on another replica saw
	// (project-nats; nil otherwise): it follows from the run's first frame
	// (RUN_STARTED) with that frame's id as Last-Event-ID.
	Follower *RunStats
}

// client is the load client's HTTP client: one connection per concurrent
// stream, kept alive.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8192, DisableCompression: true, ResponseHeaderTimeout: 0}}

// The stages of a project run before its first chunk (RunStats.Marks).
const (
	markRunStarted = iota
	markSubagentStarted
	numMarks
)

// markFrames are the frames that end each stage.
var markFrames = [numMarks][]byte{[]byte(`"type":"RUN_STARTED"`), []byte(`"name":"subagent.started"`)}

var (
	markerPrefix = []byte("~c")
	runFinished  = []byte(`"type":"RUN_FINISHED"`)
	runError     = []byte(`"type":"RUN_ERROR"`)
)

// runOnce posts one RunAgentInput to url and reads its SSE stream to the
// end. sel says which frames carry chunks (other frames may repeat chunk
// text, e.g. the project's subagent.text.end); needFinished, when set, is a
// frame the stream must hold besides RUN_FINISHED; marks, when non-nil, is
// called after every chunk with the number received so far.
func runOnce(ctx context.Context, url string, sys *systemKind, s Stream, n int, marks func(int)) RunStats {
	return runFollowed(ctx, url, "", sys, s, n, marks)
}

// runFollowed is runOnce; with follower set, the run is also followed on
// that replica from its first frame on (RunStats.Follower).
func runFollowed(ctx context.Context, url, follower string, sys *systemKind, s Stream, n int, marks func(int)) RunStats {
	var st RunStats
	runID := fmt.Sprintf("run-%s-%d-%s", sys.name, n, newID())
	body, _ := json.Marshal(map[string]any{
		"threadId": fmt.Sprintf("bench-%s-%d-%s", sys.name, n, newID()),
		"runId":    runID,
		"messages": []map[string]string{{"id": "u-" + newID(), "role": "user", "content": s.Objective()}},
		"tools":    []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{},
	})
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/agui", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		st.Err = err
		return st
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		st.Err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		return st
	}
	var followed chan RunStats
	follow := func(id []byte) {
		if follower == "" || followed != nil || len(id) == 0 {
			return
		}
		followed = make(chan RunStats, 1)
		last := string(id)
		go func() { followed <- followRun(ctx, follower, runID, last, sys, s, start) }()
	}
	readRun(resp.Body, sys, s, &st, start, marks, follow)
	if followed != nil {
		f := <-followed
		st.Follower = &f
	}
	return st
}

// followRun follows runID on a replica from cursor last (the run's first
// frame) to its end; latencies are measured as the owner's client's are.
func followRun(ctx context.Context, url, runID, last string, sys *systemKind, s Stream, start time.Time) RunStats {
	var st RunStats
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/agui/runs/"+runID+"/events", nil)
	req.Header.Set("Last-Event-ID", last)
	resp, err := client.Do(req)
	if err != nil {
		st.Err = err
		return st
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		st.Err = fmt.Errorf("follow: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		return st
	}
	readRun(resp.Body, sys, s, &st, start, nil, nil)
	return st
}

// readRun reads one run's SSE stream into st; id, when set, sees the id
// of every frame that has one.
func readRun(r io.Reader, sys *systemKind, s Stream, st *RunStats, start time.Time, marks func(int), id func([]byte)) {
	seen := make([]bool, s.Chunks)
	st.Lat = make([]int64, 0, s.Chunks)
	st.Steady = make([]int64, 0, max(0, s.Chunks-2))
	finished, needed := false, sys.needFinished == nil
	var tail []string // the last frames' heads, for Diag
	frames := 0
	done := func(data []byte) {
		frames++
		if len(tail) == 6 {
			tail = tail[1:]
		}
		tail = append(tail, string(data[:min(len(data), 120)]))
		frameDone(data, sys, seen, st, start, &finished, &needed, marks)
	}
	rd := bufio.NewReaderSize(r, 64<<10)
	var line, data []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				st.Err = err
			}
			break
		}
		l := bytes.TrimRight(line, "\r\n")
		switch {
		case len(l) == 0: // end of frame
			if len(data) > 0 {
				done(data)
			}
			data = data[:0]
		case bytes.HasPrefix(l, []byte("data:")):
			d := bytes.TrimPrefix(l[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, d...)
		case id != nil && bytes.HasPrefix(l, []byte("id:")):
			id(bytes.TrimSpace(l[3:]))
		}
		line = line[:0]
	}
	if len(data) > 0 {
		done(data)
	}
	st.Elapsed = time.Since(start)
	for _, ok := range seen {
		if !ok {
			st.Lost++
		}
	}
	st.Terminal = finished && needed && st.Err == nil
	if !st.Terminal && st.Err == nil {
		st.Diag = fmt.Sprintf("stream ended after %d frames without its terminal event(s) (RUN_FINISHED %v, %s %v); last frames: %s",
			frames, finished, sys.needFinished, needed, strings.Join(tail, " | "))
	}
}

func frameDone(data []byte, sys *systemKind, seen []bool, st *RunStats, start time.Time, finished, needed *bool, marks func(int)) {
	for i, f := range markFrames {
		if st.Marks[i] == 0 && bytes.Contains(data, f) {
			st.Marks[i] = time.Since(start)
		}
	}
	if bytes.Contains(data, sys.chunkFrame) {
		now := monoNow()
		if st.Chunks == 0 && st.Duplicates == 0 {
			st.FirstChunk = time.Since(start)
		}
		rest := data
		for {
			i := bytes.Index(rest, markerPrefix)
			if i < 0 {
				break
			}
			rest = rest[i+2:]
			seq, n1 := parseUint(rest)
			if n1 == 0 || n1 >= len(rest) || rest[n1] != ':' {
				continue
			}
			ns, n2 := parseUint(rest[n1+1:])
			if n2 == 0 {
				continue
			}
			rest = rest[n1+1+n2:]
			if seq < 0 || seq >= len(seen) {
				continue
			}
			if seen[seq] {
				st.Duplicates++
				continue
			}
			seen[seq] = true
			st.Chunks++
			lat := now - int64(ns)
			st.Lat = append(st.Lat, lat)
			if seq != 0 && seq != len(seen)-1 {
				st.Steady = append(st.Steady, lat)
			}
			if marks != nil {
				marks(st.Chunks)
			}
		}
		return
	}
	switch {
	case bytes.Contains(data, runFinished):
		*finished = true
	case bytes.Contains(data, runError):
		st.Err = fmt.Errorf("RUN_ERROR: %.300s", data)
	case sys.needFinished != nil && bytes.Contains(data, sys.needFinished):
		*needed = true
	}
}

func parseUint(b []byte) (int, int) {
	v, n := 0, 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		v = v*10 + int(b[n]-'0')
		n++
	}
	return v, n
}

// load runs total delegations against url with at most c in flight (closed
// loop: each of c workers starts the next delegation when its last one
// ended). When stop is non-nil, workers keep starting delegations past total
// until it is closed.
func load(ctx context.Context, url string, sys *systemKind, s Stream, c, total int, stop <-chan struct{}) []RunStats {
	return loadFollowed(ctx, url, "", sys, s, c, total, stop)
}

// loadFollowed is load; with follower set, every run is also followed on
// that replica (RunStats.Follower).
func loadFollowed(ctx context.Context, url, follower string, sys *systemKind, s Stream, c, total int, stop <-chan struct{}) []RunStats {
	var (
		next atomic.Int64
		mu   sync.Mutex
		out  = make([]RunStats, 0, total)
		wg   sync.WaitGroup
	)
	for range c {
		wg.Go(func() {
			for {
				n := int(next.Add(1))
				if stop != nil {
					select {
					case <-stop:
						return
					default:
					}
				} else if n > total {
					return
				}
				if ctx.Err() != nil {
					return
				}
				st := runFollowed(ctx, url, follower, sys, s, n, nil)
				mu.Lock()
				out = append(out, st)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}
