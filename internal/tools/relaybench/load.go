package relaybench

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

// Tagged is the task text of stream j of a fan-out: the remote tags its
// markers with j.
func (s Stream) Tagged(j int) string { return fmt.Sprintf("%s stream=%d", s.Objective(), j) }

// RunStats is what the load client saw of one run (one POST /agui): one
// delegation, or Width of them at once (fan-out).
type RunStats struct {
	// Lat and Steady are relay latencies in ns (remote stamp -> frame read),
	// Steady without each stream's first and last chunk; SteadyAt holds the
	// monotonic time (ns) each Steady chunk arrived, for the fan-out's
	// steady-state window.
	Lat, Steady, SteadyAt []int64
	// FirstChunk is the time from sending the request to the first chunk;
	// FirstChunks the same for each stream of a fan-out.
	FirstChunk  time.Duration
	FirstChunks []time.Duration
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
	// event(s) (RUN_FINISHED; for the project also one subagent.finished
	// per delegation, as for the bare relay's fan-out).
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

// runOpts are the optional parts of one run.
type runOpts struct {
	// width is the number of remote streams the response carries (fan-out;
	// default 1). Their markers are tagged 0..width-1.
	width int
	// message is the user message (default: the stream's objective).
	message string
	// marks, when non-nil, is called after every chunk with the number
	// received so far.
	marks func(int)
	// fan, when non-nil, is told when each stream starts and ends.
	fan *fanTracker
	// follower, when set, is another replica's URL: the run is followed
	// there too from its first frame on (RunStats.Follower).
	follower string
}

// fanTracker follows every stream of a fan-out level: allStarted is
// closed when each of total streams has had its first chunk, firstEnded
// when the first stream has had its last chunk. Between the two every
// stream is live: the steady state.
type fanTracker struct {
	total      int64
	started    atomic.Int64
	allStarted chan struct{}
	firstEnded chan struct{}
	endOnce    sync.Once
}

func newFanTracker(total int) *fanTracker {
	return &fanTracker{total: int64(total), allStarted: make(chan struct{}), firstEnded: make(chan struct{})}
}

func (f *fanTracker) streamStarted() {
	if f.started.Add(1) == f.total {
		close(f.allStarted)
	}
}

func (f *fanTracker) streamEnded() { f.endOnce.Do(func() { close(f.firstEnded) }) }

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
// end. sys says which frames carry chunks (other frames may repeat chunk
// text, e.g. the project's subagent.text.end) and which frames, besides
// RUN_FINISHED, end a stream. With o.follower set, the run is also followed
// on that replica from its first frame on (RunStats.Follower).
func runOnce(ctx context.Context, url string, sys *systemKind, s Stream, n int, o runOpts) RunStats {
	o.width = max(1, o.width)
	if o.message == "" {
		o.message = s.Objective()
	}
	runID := fmt.Sprintf("run-%s-%d-%s", sys.name, n, newID())
	body, _ := json.Marshal(map[string]any{
		"threadId": fmt.Sprintf("bench-%s-%d-%s", sys.name, n, newID()),
		"runId":    runID,
		"messages": []map[string]string{{"id": "u-" + newID(), "role": "user", "content": o.message}},
		"tools":    []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{},
	})
	r := newReader(sys, s, o, time.Now())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/agui", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		r.st.Err = err
		return r.st
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		r.st.Err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		return r.st
	}
	var followed chan RunStats
	var follow func([]byte)
	if o.follower != "" {
		follow = func(id []byte) {
			if followed != nil || len(id) == 0 {
				return
			}
			followed = make(chan RunStats, 1)
			last := string(id)
			go func() { followed <- followRun(ctx, o.follower, runID, last, sys, s, o, r.start) }()
		}
	}
	r.read(resp.Body, follow)
	if followed != nil {
		f := <-followed
		r.st.Follower = &f
	}
	return r.st
}

// followRun follows runID on a replica from cursor last (the run's first
// frame) to its end; latencies are measured as the owner's client's are.
func followRun(ctx context.Context, url, runID, last string, sys *systemKind, s Stream, o runOpts, start time.Time) RunStats {
	o.marks, o.fan, o.follower = nil, nil, ""
	r := newReader(sys, s, o, start)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/agui/runs/"+runID+"/events", nil)
	req.Header.Set("Last-Event-ID", last)
	resp, err := client.Do(req)
	if err != nil {
		r.st.Err = err
		return r.st
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		r.st.Err = fmt.Errorf("follow: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		return r.st
	}
	r.read(resp.Body, nil)
	return r.st
}

// newReader returns the reader of one run's stream of o.width remote
// streams of s.Chunks chunks each.
func newReader(sys *systemKind, s Stream, o runOpts, start time.Time) *reader {
	r := &reader{sys: sys, opts: o, finishedFrame: sys.finishedFrame(o.width), start: start}
	st := &r.st
	r.seen = make([][]bool, o.width)
	for j := range r.seen {
		r.seen[j] = make([]bool, s.Chunks)
	}
	r.got = make([]int, o.width)
	st.Lat = make([]int64, 0, s.Chunks*o.width)
	st.Steady = make([]int64, 0, max(0, s.Chunks-2)*o.width)
	if o.fan != nil {
		st.SteadyAt = make([]int64, 0, cap(st.Steady))
	}
	if o.width > 1 {
		st.FirstChunks = make([]time.Duration, o.width)
	}
	return r
}

// read reads one run's SSE stream to its end; id, when set, sees the id of
// every frame that has one.
func (r *reader) read(body io.Reader, id func([]byte)) {
	st, o := &r.st, r.opts
	rd := bufio.NewReaderSize(body, 64<<10)
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
				r.frame(data)
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
		r.frame(data)
	}
	st.Elapsed = time.Since(r.start)
	for _, seen := range r.seen {
		for _, ok := range seen {
			if !ok {
				st.Lost++
			}
		}
	}
	needed := r.finishedFrame == nil || r.finished >= o.width
	st.Terminal = r.runFinished && needed && st.Err == nil
	if !st.Terminal && st.Err == nil {
		st.Diag = fmt.Sprintf("stream ended after %d frames without its terminal event(s) (RUN_FINISHED %v, %d/%d of %s); last frames: %s",
			r.frames, r.runFinished, r.finished, o.width, r.finishedFrame, strings.Join(r.tail, " | "))
	}
}

// reader is the state of one run's stream as the load client reads it.
type reader struct {
	sys           *systemKind
	opts          runOpts
	finishedFrame []byte
	start         time.Time
	st            RunStats
	seen          [][]bool // [stream][chunk]
	got           []int    // chunks received per stream
	finished      int      // finishedFrame frames seen
	runFinished   bool
	frames        int
	tail          []string // the last frames' heads, for Diag
}

func (r *reader) frame(data []byte) {
	r.frames++
	if len(r.tail) == 6 {
		r.tail = r.tail[1:]
	}
	r.tail = append(r.tail, string(data[:min(len(data), 120)]))
	st := &r.st
	for i, f := range markFrames {
		if st.Marks[i] == 0 && bytes.Contains(data, f) {
			st.Marks[i] = time.Since(r.start)
		}
	}
	if bytes.Contains(data, r.sys.chunkFrame) {
		r.chunks(data)
		return
	}
	switch {
	case bytes.Contains(data, runFinished):
		r.runFinished = true
	case bytes.Contains(data, runError):
		st.Err = fmt.Errorf("RUN_ERROR: %.300s", data)
	case r.finishedFrame != nil && bytes.Contains(data, r.finishedFrame):
		r.finished++
	}
}

// chunks records the markers ~c<seq>:<ns>~ or ~c<seq>:<ns>:<stream>~ of a
// frame that carries chunks.
func (r *reader) chunks(data []byte) {
	st := &r.st
	now := monoNow()
	if st.Chunks == 0 && st.Duplicates == 0 {
		st.FirstChunk = time.Since(r.start)
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
		j := 0
		if len(rest) > 0 && rest[0] == ':' {
			var n3 int
			if j, n3 = parseUint(rest[1:]); n3 == 0 {
				continue
			}
			rest = rest[1+n3:]
		}
		if j < 0 || j >= len(r.seen) {
			continue
		}
		seen := r.seen[j]
		if seq < 0 || seq >= len(seen) {
			continue
		}
		if seen[seq] {
			st.Duplicates++
			continue
		}
		seen[seq] = true
		st.Chunks++
		if r.got[j]++; r.got[j] == 1 {
			if st.FirstChunks != nil {
				st.FirstChunks[j] = time.Since(r.start)
			}
			if r.opts.fan != nil {
				r.opts.fan.streamStarted()
			}
		}
		if seq == len(seen)-1 && r.opts.fan != nil {
			r.opts.fan.streamEnded()
		}
		lat := now - int64(ns)
		st.Lat = append(st.Lat, lat)
		if seq != 0 && seq != len(seen)-1 {
			st.Steady = append(st.Steady, lat)
			if st.SteadyAt != nil {
				st.SteadyAt = append(st.SteadyAt, now)
			}
		}
		if r.opts.marks != nil {
			r.opts.marks(st.Chunks)
		}
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

// load runs total runs against url with at most c in flight (closed loop:
// each of c workers starts the next run when its last one ended); o is
// every run's options. When stop is non-nil, workers keep starting runs
// past total until it is closed.
func load(ctx context.Context, url string, sys *systemKind, s Stream, c, total int, stop <-chan struct{}, o runOpts) []RunStats {
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
				st := runOnce(ctx, url, sys, s, n, o)
				mu.Lock()
				out = append(out, st)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}
