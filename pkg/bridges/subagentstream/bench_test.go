package subagentstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// benchStream starts a parent that stays in a delegation tool call, and
// returns its stream and bus.
func benchStream(b *testing.B, opts subagentstream.Options) (*subagentstream.Hub, *subagentstream.Stream, delegation.EventBus, string, func()) {
	b.Helper()
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: opts})
	a := &shellParent{dir: b.TempDir()}
	h := startParentB(b, a, a.script(P{Kind: "tool_call.start", ToolCallID: "toolu_1", ToolName: "delegate_to_agent"}, "wait:go"))
	st := hub.Start(h, "th", "run-bench")
	return hub, st, bus, h.RunID(), func() { a.releaseB(b, "go"); hub.Close() }
}

// BenchmarkMuxThroughput: subagent text deltas through the mux, the
// subscriber queue and SSE framing, on one publishing goroutine.
func BenchmarkMuxThroughput(b *testing.B) {
	hub, st, bus, runID, done := benchStream(b, subagentstream.Options{ReplayFrames: 4096, SubscriberBuffer: 1 << 30, SubscriberMaxBytes: 1 << 30})
	defer done()
	_ = hub
	sub, _ := st.Subscribe(0)
	enc := sse.NewEncoder(io.Discard)
	ctx := context.Background()
	for range 3 { // RUN_STARTED, TOOL_CALL_START, TOOL_CALL_ARGS?
		if sub.Pending() == 0 {
			break
		}
		f, _ := sub.Next(ctx)
		_ = enc.WriteFrame(f.ID, f.Data)
	}
	pubs := make([]*pub, 10)
	for i := range pubs {
		pubs[i] = newPub(bus, runID, fmt.Sprintf("del-%d", i), "toolu_1")
		pubs[i].send(delegation.DelegationStarted)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		// Count tokens, not frames: under pressure the bus and the
		// subscriber coalesce deltas.
		n := 0
		for n < b.N {
			f, err := sub.Next(ctx)
			if err != nil {
				return
			}
			_ = enc.WriteFrame(f.ID, f.Data)
			n += bytes.Count(f.Data, []byte("token "))
		}
	})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pubs[i%len(pubs)].send(delegation.DelegationTextDelta, delta("m", "token "))
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRelayLatency measures bus publish -> SSE frame written with 100
// concurrent delegations each streaming 200 events/s, beside a bare decode+encode relay of the same
// events (the baseline): p50/p99 of both and their ratio.
func BenchmarkRelayLatency(b *testing.B) {
	const delegations = 100
	hub, st, bus, runID, done := benchStream(b, subagentstream.Options{ReplayFrames: 4096, SubscriberBuffer: 1 << 30, SubscriberMaxBytes: 1 << 30})
	defer done()
	_ = hub
	sub, _ := st.Subscribe(0)
	ctx := context.Background()
	enc := sse.NewEncoder(io.Discard)
	stamps := make([]time.Time, b.N)
	lat := make([]time.Duration, 0, b.N)
	var wg sync.WaitGroup
	wg.Go(func() {
		for len(lat) < b.N {
			f, err := sub.Next(ctx)
			if err != nil {
				return
			}
			_ = enc.WriteFrame(f.ID, f.Data)
			var m struct {
				Name  string `json:"name"`
				Value struct {
					Delta string `json:"delta"`
				} `json:"value"`
			}
			if f.Type != "CUSTOM" || json.Unmarshal(f.Data, &m) != nil || m.Name != "subagent.text.delta" {
				continue
			}
			now := time.Now()
			for part := range strings.SplitSeq(strings.TrimSuffix(m.Value.Delta, ","), ",") {
				i, _ := strconv.Atoi(part)
				lat = append(lat, now.Sub(stamps[i]))
			}
		}
	})
	pubs := make([]*pub, delegations)
	for i := range pubs {
		pubs[i] = newPub(bus, runID, fmt.Sprintf("del-%d", i), "toolu_1")
		pubs[i].send(delegation.DelegationStarted)
	}
	b.ResetTimer()
	cpu0 := processCPU()
	var pw sync.WaitGroup
	per := (b.N + delegations - 1) / delegations
	for d := range delegations {
		pw.Go(func() {
			for i := d * per; i < min((d+1)*per, b.N); i++ {
				stamps[i] = time.Now()
				pubs[d].send(delegation.DelegationTextDelta, delta("m", strconv.Itoa(i)+","))
				time.Sleep(5 * time.Millisecond) // 200 events/s per remote, 20k/s in all
			}
		})
	}
	pw.Wait()
	wg.Wait()
	b.StopTimer()
	cpu := processCPU() - cpu0
	p50, p99 := pct(lat, 50), pct(lat, 99)

	// Baseline: the same events decoded from JSON and encoded as CUSTOM
	// frames by one relay goroutine, no mux.
	in := make(chan []byte, 1024)
	var base []time.Duration
	bstamps := make([]time.Time, b.N)
	var bw sync.WaitGroup
	bw.Go(func() {
		for raw := range in {
			var ev delegation.DelegationEvent
			_ = json.Unmarshal(raw, &ev)
			c := agui.NewCustomEvent(string(ev.Kind), subagentstream.Value(ev, "run", false), ev.Time)
			data, _ := c.ToJSON()
			_ = enc.WriteFrame(1, data)
			i, _ := strconv.Atoi(strings.TrimSuffix(ev.Delta, ","))
			base = append(base, time.Since(bstamps[i]))
		}
	})
	for i := 0; i < b.N; i++ {
		bstamps[i] = time.Now()
		raw, _ := json.Marshal(delegation.DelegationEvent{RunID: runID, DelegationID: "d", Kind: delegation.DelegationTextDelta, Delta: strconv.Itoa(i) + ",", Time: bstamps[i]})
		in <- raw
		time.Sleep(50 * time.Microsecond) // the same 20k events/s
	}
	close(in)
	bw.Wait()
	b50, b99 := pct(base, 50), pct(base, 99)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(b50.Microseconds()), "baseline-p50-µs")
	b.ReportMetric(float64(b99.Microseconds()), "baseline-p99-µs")
	// The process's CPU over the paced phase (publishers, bus, mux,
	// subscriber, SSE framing), per event: what the mux path costs when
	// events arrive one by one rather than in a burst.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
}

// processCPU returns the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// BenchmarkHeapPerDelegation reports the heap one active delegation costs
// the mux and a subscriber (a small replay buffer, so it is excluded).
func BenchmarkHeapPerDelegation(b *testing.B) {
	const n = 1000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		hub, st, bus, runID, done := benchStream(b, subagentstream.Options{ReplayFrames: 16})
		sub, _ := st.Subscribe(0)
		ctx := context.Background()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for c := 0; c < n*3; {
				f, err := sub.Next(ctx)
				if err != nil {
					return
				}
				if f.Type == "CUSTOM" {
					c++
				}
			}
		}()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for d := range n {
			p := newPub(bus, runID, fmt.Sprintf("del-%d", d), "toolu_1")
			p.send(delegation.DelegationStarted)
			p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = "working" })
			p.send(delegation.DelegationTextStart, msg("m"))
		}
		<-drained
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-B/delegation")
		_ = hub
		done()
		b.StartTimer()
	}
}
