// Package soak_test is the load driver of the soak figures in
// docs/benchmarks.md: 1,000 concurrent
// delegations over 100 parent runs, through the real SDK (shell parents kept
// alive), the delegation service (Service.Delegate with each run's context),
// fake A2A agents on loopback, the MemoryBus and the subagentstream mux. It
// checks the guarantees (exactly one terminal event per delegation on the
// bus and on the mux, per-delegation order, every remote task completed or
// canceled, no goroutine left) and reports wall time, delegations/s and
// peak heap. It is a load driver, not part of the normal suite: TestSoak runs
// only with AGENTADAPTOR_SOAK=1; BenchmarkSoak runs one full soak per
// iteration.
//
// Knobs (environment, defaults in brackets): AGENTADAPTOR_SOAK_RUNS [100],
// AGENTADAPTOR_SOAK_PER_RUN [10], AGENTADAPTOR_SOAK_SERVERS [4],
// AGENTADAPTOR_SOAK_HANG (fraction of delegations whose remote task hangs
// until its parent context is cancelled) [0.2],
// AGENTADAPTOR_SOAK_EARLY_CANCEL (fraction of the hanging ones whose parent
// context is cancelled at the moment the fake agent receives the request,
// before the delegator can know the remote task id) [0],
// AGENTADAPTOR_SOAK_STEP_DELAY (pause between remote events) [20ms],
// AGENTADAPTOR_SOAK_CHUNKS (streamed text chunks per task) [5],
// AGENTADAPTOR_SOAK_DEADLINE (overall bound) [5m]. Diagnostics:
// AGENTADAPTOR_SOAK_GOROUTINES=FILE writes the goroutine profile 3s in,
// AGENTADAPTOR_SOAK_HEAPPROFILE=FILE the heap profile when every delegation
// is active.
package soak_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

const (
	soakEnv  = "AGENTADAPTOR_SOAK"
	tokenEnv = "AGENTADAPTOR_SOAK_AGENT_TOKEN"
	// agentToken is the fake agents' bearer credential (a test value).
	agentToken = "soak-agent-token-4b1d9e0c7a"
	hangPrefix = "hang:"
)

func init() { _ = os.Setenv(tokenEnv, agentToken) }

// TestSoak is the load driver of docs/benchmarks.md's soak
// (AGENTADAPTOR_SOAK=1 to run).
func TestSoak(t *testing.T) {
	if os.Getenv(soakEnv) != "1" {
		t.Skipf("load driver: set %s=1 to run it", soakEnv)
	}
	cfg := configFromEnv(t)
	rep := runSoak(t, cfg)
	t.Log(rep.String())
}

// BenchmarkSoak runs one full soak per iteration and reports its figures.
func BenchmarkSoak(b *testing.B) {
	cfg := configFromEnv(b)
	var last report
	var wall time.Duration
	for i := 0; i < b.N; i++ {
		last = runSoak(b, cfg)
		wall += last.Wall
	}
	b.ReportMetric(float64(last.Delegations*b.N)/wall.Seconds(), "delegations/s")
	b.ReportMetric(wall.Seconds()/float64(b.N), "wall-s/soak")
	b.ReportMetric(float64(last.PeakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(last.PeakActive), "peak-active")
	b.ReportMetric(float64(last.CompletedP99.Microseconds())/1000, "p99-ms")
	b.Log(last.String())
}

type config struct {
	Runs, PerRun, Servers, Chunks int
	HangFraction, EarlyCancel     float64
	StepDelay, Deadline           time.Duration
}

func configFromEnv(tb testing.TB) config {
	tb.Helper()
	c := config{Runs: 100, PerRun: 10, Servers: 4, Chunks: 5, HangFraction: 0.2, StepDelay: 20 * time.Millisecond, Deadline: 5 * time.Minute}
	ints := map[string]*int{"RUNS": &c.Runs, "PER_RUN": &c.PerRun, "SERVERS": &c.Servers, "CHUNKS": &c.Chunks}
	for k, p := range ints {
		if v := os.Getenv("AGENTADAPTOR_SOAK_" + k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100000 {
				tb.Fatalf("AGENTADAPTOR_SOAK_%s=%q: want a positive count", k, v)
			}
			*p = n
		}
	}
	fracs := map[string]*float64{"HANG": &c.HangFraction, "EARLY_CANCEL": &c.EarlyCancel}
	for k, p := range fracs {
		if v := os.Getenv("AGENTADAPTOR_SOAK_" + k); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				tb.Fatalf("AGENTADAPTOR_SOAK_%s=%q: want a fraction in [0,1]", k, v)
			}
			*p = f
		}
	}
	durs := map[string]*time.Duration{"STEP_DELAY": &c.StepDelay, "DEADLINE": &c.Deadline}
	for k, p := range durs {
		if v := os.Getenv("AGENTADAPTOR_SOAK_" + k); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				tb.Fatalf("AGENTADAPTOR_SOAK_%s=%q: want a duration", k, v)
			}
			*p = d
		}
	}
	if c.PerRun > 64 {
		tb.Fatalf("AGENTADAPTOR_SOAK_PER_RUN=%d: at most 64", c.PerRun)
	}
	return c
}

// report holds the measured figures of one soak.
type report struct {
	Config                     config
	Delegations, Hung, Early   int
	Wall                       time.Duration // first Delegate call to last return
	PeakActive, ActiveAtCancel int
	PeakGoroutines             int
	BaseHeap, PeakHeap         uint64
	LiveHeapAllActive          uint64 // after a forced GC with every delegation active
	StacksAllActive            uint64
	CompletedP50, CompletedP99 time.Duration
	CancelP50, CancelP99       time.Duration
	BusEvents, MuxFrames       int
	CancelRequests             int
	CancelPending              int
}

func (r report) String() string {
	perDel := 0.0
	if r.Delegations > 0 && r.PeakHeap > r.BaseHeap {
		perDel = float64(r.PeakHeap-r.BaseHeap) / float64(r.Delegations) / 1024
	}
	livePer := 0.0
	if r.Delegations > 0 && r.LiveHeapAllActive > r.BaseHeap {
		livePer = float64(r.LiveHeapAllActive-r.BaseHeap) / float64(r.Delegations) / 1024
	}
	return fmt.Sprintf("soak: %d delegations over %d runs (%d servers, %d hanging, %d of them cancelled early), GOMAXPROCS=%d\n"+
		"  wall %v, %.0f delegations/s, peak active delegations %d (normal ones still active at the midway cancel: %d)\n"+
		"  completed delegation latency p50 %v p99 %v; cancel -> tool result p50 %v p99 %v\n"+
		"  heap: baseline %.1f MiB, peak (incl. unswept) %.1f MiB (%.1f KiB per delegation above baseline); live with all active %.1f MiB (%.1f KiB per delegation, fake agents and parents included), stacks %.1f MiB; peak goroutines %d\n"+
		"  bus events %d, mux frames %d, remote CancelTask requests %d, cancel_pending results %d",
		r.Delegations, r.Config.Runs, r.Config.Servers, r.Hung, r.Early, runtime.GOMAXPROCS(0),
		r.Wall.Round(time.Millisecond), float64(r.Delegations)/r.Wall.Seconds(), r.PeakActive, r.ActiveAtCancel,
		r.CompletedP50.Round(time.Microsecond), r.CompletedP99.Round(time.Microsecond), r.CancelP50.Round(time.Microsecond), r.CancelP99.Round(time.Microsecond),
		float64(r.BaseHeap)/(1<<20), float64(r.PeakHeap)/(1<<20), perDel, float64(r.LiveHeapAllActive)/(1<<20), livePer, float64(r.StacksAllActive)/(1<<20), r.PeakGoroutines,
		r.BusEvents, r.MuxFrames, r.CancelRequests, r.CancelPending)
}

// ---- the parent: a /bin/sh script printing StreamPayload JSON lines ----

// newParent is the parents' adapter (internal/testkit/shellagent): each run's
// script, its "script" option, blocks at a FIFO gate (no polling: 100
// parents must not cost CPU while they wait).
func newParent() *shellagent.Adapter { return &shellagent.Adapter{AdapterName: "soak-shell"} }

func toolCallID(j int) string { return fmt.Sprintf("toolu_%02d", j) }

// parentScript: perRun delegate_to_agent tool calls, wait at the gate,
// their results, a closing answer.
func parentScript(perRun int, gate shellagent.Gate) string {
	var starts, results []agentadaptor.StreamPayload
	for j := range perRun {
		starts = append(starts, agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: toolCallID(j), ToolName: "delegate_to_agent"})
		results = append(results, agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallResult, ToolCallID: toolCallID(j), ToolResult: `{"status":"done"}`})
	}
	return shellagent.Script(
		shellagent.Print(starts...),
		gate.Wait(),
		shellagent.Print(results...),
		shellagent.Print(
			agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: "answer"},
			agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: "answer", Delta: "All delegations ended."},
			agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: "answer"},
		),
	)
}

// ---- bookkeeping ----

type runRec struct {
	idx      int
	h        *agentadaptor.RunHandle
	aguiRun  string
	release  shellagent.Gate
	sub      *subagentstream.Subscriber
	busSub   *delegation.Subscription
	startsCh chan struct{} // closed once every tool call start frame was seen
	muxDone  chan struct{}
	busDone  chan struct{}
	muxErr   error

	mu     sync.Mutex
	frames []*subagentstream.Frame
	events []delegation.DelegationEvent
}

type delRec struct {
	run    *runRec
	parent string
	agent  string
	server int
	hang   bool
	early  bool

	obj string

	ctx      context.Context
	cancel   context.CancelFunc
	taskSeen chan struct{}
	seenOnce sync.Once
	done     chan struct{}

	start, end time.Time
	res        delegation.Result

	mu       sync.Mutex
	cancelAt time.Time
}

func (d *delRec) cancelNow() {
	d.mu.Lock()
	d.cancelAt = time.Now()
	d.mu.Unlock()
	d.cancel()
}

func (d *delRec) cancelledAt() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancelAt
}

// expectedText is what every completing task streams.
func expectedChunks(n int) []string {
	words := []string{"alpha ", "beta ", "gamma ", "delta ", "epsilon "}
	out := make([]string, n)
	for i := range out {
		out[i] = words[i%len(words)] + strconv.Itoa(i) + " "
	}
	return out
}

// errs caps the error output of one category of failures.
type errs struct {
	tb     testing.TB
	mu     sync.Mutex
	counts map[string]int
}

func (e *errs) add(cat, format string, args ...any) {
	e.tb.Helper()
	e.mu.Lock()
	e.counts[cat]++
	n := e.counts[cat]
	e.mu.Unlock()
	if n <= 10 {
		e.tb.Errorf("["+cat+"] "+format, args...)
	}
}

func (e *errs) summary() {
	for cat, n := range e.counts {
		if n > 10 {
			e.tb.Errorf("[%s] %d failures in total (first 10 shown)", cat, n)
		}
	}
}

// heapBytes reads the live+unswept heap objects size without stopping the world.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func stackBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// ---- the soak ----

func runSoak(tb testing.TB, cfg config) report {
	tb.Helper()
	leakBase := goleak.IgnoreCurrent()
	rep := report{Config: cfg}
	e := &errs{tb: tb, counts: map[string]int{}}
	defer e.summary()
	deadline := time.Now().Add(cfg.Deadline)
	ctx, cancelAll := context.WithDeadline(context.Background(), deadline)
	defer cancelAll()

	// Remote agents: completing tasks stream a few statuses and text chunks
	// (paced by StepDelay); "hang:" tasks report working and hang until cancelled.
	chunks := expectedChunks(cfg.Chunks)
	wantText := strings.Join(chunks, "")
	normal := fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("searching"), fakea2a.Sleep(cfg.StepDelay),
		fakea2a.TextChunks(chunks...), fakea2a.Sleep(cfg.StepDelay),
		fakea2a.Working("summarizing"), fakea2a.Completed("done"))...)
	hang := fakea2a.Script(fakea2a.Working("hanging until cancelled"), fakea2a.Hang())
	var earlyByObjective sync.Map // objective -> *delRec to cancel when its request arrives
	choose := func(m *a2a.Message) fakea2a.Behavior {
		if m == nil || len(m.Parts) == 0 || m.Parts[0] == nil {
			return normal
		}
		text := m.Parts[0].Text()
		if d, ok := earlyByObjective.LoadAndDelete(text); ok {
			d.(*delRec).cancelNow()
		}
		if strings.HasPrefix(text, hangPrefix) {
			return hang
		}
		return normal
	}
	servers := make([]*fakea2a.Server, cfg.Servers)
	var specs []registry.RemoteAgentSpec
	total := cfg.Runs * cfg.PerRun
	for i := range servers {
		servers[i] = fakea2a.New(tb, fakea2a.Options{Name: fmt.Sprintf("soak-%d", i), Streaming: true, Choose: choose, RequireToken: agentToken})
		pol := registry.DefaultPolicy()
		pol.MaxTimeout = cfg.Deadline
		pol.MaxConcurrentPerRun = cfg.PerRun
		pol.MaxConcurrentGlobal = total
		specs = append(specs, registry.RemoteAgentSpec{Key: fmt.Sprintf("agent%d", i), DisplayName: fmt.Sprintf("Soak Agent %d", i),
			Description: "Host-written soak agent.", Protocol: delegation.ProtocolA2A, AgentCardURL: servers[i].CardURL(),
			AuthRef: "env:" + tokenEnv, Policy: pol})
	}
	reg, err := newRegistry(specs...)
	if err != nil {
		tb.Fatal(err)
	}
	bus := delegation.NewMemoryBus()
	var warnCount atomic.Int64
	logger := slog.New(countingHandler{n: &warnCount})
	svc, err := delegator.New(ctx, delegator.Config{Registry: reg, Bus: bus, Logger: logger, FailOnCardError: true,
		CancelTimeout: 30 * time.Second, CleanupInterval: 200 * time.Millisecond, CleanupAttempts: 5})
	if err != nil {
		tb.Fatal(err)
	}
	tools, err := mcptool.New(mcptool.Config{Delegator: svc, Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Logger: logger, Stream: subagentstream.Options{HoldTimeout: 60 * time.Second, Logger: logger}})
	closed := false
	teardown := func() {
		if closed {
			return
		}
		closed = true
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = tools.Close()
		if err := svc.Close(cctx); err != nil {
			tb.Errorf("Delegator.Close: %v", err)
		}
		hub.Close()
		for _, s := range servers {
			s.Close()
		}
	}
	defer teardown()

	// Parent runs: real SDK runs of the shell parent, the delegation MCP
	// service ensured for each (its run context is what Delegate binds to),
	// each with a mux stream subscribed from the start and a raw bus
	// subscriber beside it.
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(newParent()))
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	runs := make([]*runRec, cfg.Runs)
	defer func() {
		// On an early failure: stop the parents still waiting on their FIFO.
		for _, r := range runs {
			if r == nil {
				continue
			}
			if r.h != nil {
				cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_ = r.h.Cancel(cctx)
				cancel()
			}
		}
	}()
	for i := range runs {
		r := &runRec{idx: i, aguiRun: fmt.Sprintf("agui-run-%03d", i), startsCh: make(chan struct{}), muxDone: make(chan struct{}), busDone: make(chan struct{})}
		runs[i] = r
		r.release = shellagent.Gate(filepath.Join(dir, fmt.Sprintf("release-%03d", i)))
		r.h, err = sdk.Start(ctx, "delegate", agentadaptor.WithAdapterOption(shellagent.OptionScript, parentScript(cfg.PerRun, r.release)),
			agentadaptor.WithStreaming(), agentadaptor.WithSessionKey(fmt.Sprintf("chat-%03d", i)),
			agentadaptor.WithRuntimeServices(tools.RuntimeService()))
		if err != nil {
			tb.Fatalf("run %d: %v", i, err)
		}
		st := hub.Start(r.h, fmt.Sprintf("thread-%03d", i), r.aguiRun)
		if r.sub, err = st.Subscribe(0); err != nil {
			tb.Fatal(err)
		}
		r.busSub = bus.SubscribeRun(ctx, r.h.RunID())
		go func() {
			defer close(r.muxDone)
			starts := 0
			for {
				f, err := r.sub.Next(ctx)
				if err != nil {
					if err != io.EOF {
						r.muxErr = err
					}
					return
				}
				r.mu.Lock()
				r.frames = append(r.frames, f)
				r.mu.Unlock()
				if f.Type == "TOOL_CALL_START" {
					if starts++; starts == cfg.PerRun {
						close(r.startsCh)
					}
				}
			}
		}()
		go func() {
			defer close(r.busDone)
			for ev := range r.busSub.C {
				r.mu.Lock()
				r.events = append(r.events, ev)
				r.mu.Unlock()
			}
		}()
	}
	// Delegations are made in the parents' tool calls: wait for them.
	for _, r := range runs {
		select {
		case <-r.startsCh:
		case <-r.muxDone:
			tb.Fatalf("run %d: stream ended before its tool calls (%v)", r.idx, r.muxErr)
		case <-ctx.Done():
			tb.Fatalf("run %d: tool calls not seen before the deadline", r.idx)
		}
	}

	// Delegations: PerRun per run, spread over the servers; every
	// 1/HangFraction-th one hangs.
	dels := make([]*delRec, 0, total)
	hangEvery := 0
	if cfg.HangFraction > 0 {
		hangEvery = max(1, int(math.Round(1/cfg.HangFraction)))
	}
	earlyEvery := 0
	if cfg.EarlyCancel > 0 {
		earlyEvery = max(1, int(math.Round(1/cfg.EarlyCancel)))
	}
	for i, r := range runs {
		for j := 0; j < cfg.PerRun; j++ {
			n := i*cfg.PerRun + j
			d := &delRec{run: r, parent: toolCallID(j), server: n % cfg.Servers, taskSeen: make(chan struct{}), done: make(chan struct{})}
			d.agent = specs[d.server].Key
			d.hang = hangEvery > 0 && n%hangEvery == hangEvery-1
			if d.hang {
				rep.Hung++
				if earlyEvery > 0 && rep.Hung%earlyEvery == 0 {
					d.early = true
					rep.Early++
				}
			}
			d.ctx, d.cancel = context.WithCancel(ctx)
			d.obj = fmt.Sprintf("work:%d: summarise topic %d", n, n)
			if d.hang {
				d.obj = hangPrefix + d.obj
			}
			if d.early {
				earlyByObjective.Store(d.obj, d)
			}
			dels = append(dels, d)
		}
	}
	rep.Delegations = len(dels)

	// Sampler: peak active delegations, goroutines, heap.
	runtime.GC()
	rep.BaseHeap = heapBytes()
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		heapPath := os.Getenv("AGENTADAPTOR_SOAK_HEAPPROFILE")
		liveDone := false
		for {
			active := svc.Stats().ActiveDelegations
			if !liveDone && active == total {
				// Once, when every delegation is active: the live heap
				// (after a forced GC) and, for diagnostics, its profile.
				liveDone = true
				runtime.GC()
				rep.LiveHeapAllActive, rep.StacksAllActive = heapBytes(), stackBytes()
				if heapPath != "" {
					if f, err := os.Create(heapPath); err == nil {
						_ = pprof.Lookup("heap").WriteTo(f, 0)
						_ = f.Close()
					}
				}
			}
			rep.PeakActive = max(rep.PeakActive, active)
			rep.PeakGoroutines = max(rep.PeakGoroutines, runtime.NumGoroutine())
			rep.PeakHeap = max(rep.PeakHeap, heapBytes())
			select {
			case <-tick.C:
			case <-stopSampler:
				return
			}
		}
	}()

	var normalLeft atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	if path := os.Getenv("AGENTADAPTOR_SOAK_GOROUTINES"); path != "" {
		// Diagnostics: the aggregated goroutine profile a few seconds in.
		tm := time.AfterFunc(3*time.Second, func() {
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("goroutine").WriteTo(f, 1)
				_ = f.Close()
			}
		})
		defer tm.Stop()
	}
	for _, d := range dels {
		if !d.hang {
			normalLeft.Add(1)
		}
		wg.Go(func() {
			defer close(d.done)
			d.start = time.Now()
			d.res = svc.Delegate(d.ctx, delegator.Request{RunID: d.run.h.RunID(), SessionKey: fmt.Sprintf("chat-%03d", d.run.idx),
				ParentToolCallID: d.parent, Agent: d.agent, Objective: d.obj,
				OnEvent: func(ev delegation.DelegationEvent) {
					if ev.RemoteTaskID != "" {
						d.seenOnce.Do(func() { close(d.taskSeen) })
					}
				}})
			d.end = time.Now()
			if !d.hang {
				normalLeft.Add(-1)
			}
		})
	}
	// Midway: once every hanging task exists remotely, cancel the parents'
	// contexts of the hanging delegations.
	for _, d := range dels {
		if !d.hang || d.early {
			continue
		}
		select {
		case <-d.taskSeen:
		case <-d.done:
			e.add("hang-ended-early", "hanging delegation %s ended before its cancellation: %+v", d.res.DelegationID, d.res)
		case <-ctx.Done():
			tb.Fatalf("a hanging delegation never reported its remote task (deadline)")
		}
	}
	rep.ActiveAtCancel = int(normalLeft.Load())
	for _, d := range dels {
		if d.hang && !d.early {
			d.cancelNow()
		}
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	select {
	case <-allDone:
	case <-ctx.Done():
		var stuck []string
		for _, d := range dels {
			select {
			case <-d.done:
			default:
				stuck = append(stuck, fmt.Sprintf("run %d %s hang=%v", d.run.idx, d.parent, d.hang))
			}
		}
		close(stopSampler)
		tb.Fatalf("%d delegations did not return before the deadline (stats %+v): %v", len(stuck), svc.Stats(), stuck[:min(len(stuck), 20)])
	}
	var last time.Time
	for _, d := range dels {
		if d.end.After(last) {
			last = d.end
		}
	}
	rep.Wall = last.Sub(t0)
	close(stopSampler)
	<-samplerDone

	// Let the parents answer and end; their streams end after RUN_FINISHED.
	for _, r := range runs {
		r.release.Release(tb)
	}
	for _, r := range runs {
		res, err := r.h.Wait(ctx)
		if err != nil || res == nil {
			e.add("parent", "run %d: Wait: %v", r.idx, err)
		}
		<-r.muxDone
		<-r.busDone
		r.sub.Close()
		if r.muxErr != nil {
			e.add("parent", "run %d: mux subscriber: %v", r.idx, r.muxErr)
		}
	}
	if st := svc.Stats(); st != (delegator.Stats{}) {
		e.add("stats", "service still holds state after every run ended: %+v", st)
	}

	// ---- checks ----
	checkResults(e, dels, &rep)
	checkBus(e, runs, dels, wantText, &rep)
	checkMux(e, runs, dels, wantText, &rep)
	checkRemote(ctx, e, servers, specs, dels, &rep)
	if n := warnCount.Load(); n > 0 {
		tb.Logf("service logged %d warnings", n)
	}

	// ---- teardown and leaks ----
	teardown()
	cancelAll()
	goleak.VerifyNone(tb, leakBase)
	return rep
}

func checkResults(e *errs, dels []*delRec, rep *report) {
	ids := map[string]bool{}
	var completed, cancelled []time.Duration
	for _, d := range dels {
		r := d.res
		if r.DelegationID == "" || ids[r.DelegationID] {
			e.add("result", "missing or duplicated delegation id %q", r.DelegationID)
		}
		ids[r.DelegationID] = true
		if r.RemoteTaskID == "" && !d.early {
			e.add("result", "delegation %s has no remote task: %+v", r.DelegationID, r.Error)
		}
		switch {
		case d.hang:
			if r.Status != delegation.StatusCancelled || r.Error == nil {
				e.add("result", "hanging delegation %s: status %q error %+v, want cancelled", r.DelegationID, r.Status, r.Error)
			} else if r.Error.Code == delegation.CodeCancelPending {
				rep.CancelPending++
			} else if r.Error.Code != delegation.CodeCancelled {
				e.add("result", "hanging delegation %s: code %s, want cancelled", r.DelegationID, r.Error.Code)
			}
			cancelled = append(cancelled, d.end.Sub(d.cancelledAt()))
		default:
			if r.Status != delegation.StatusCompleted || r.Error != nil {
				e.add("result", "delegation %s: status %q error %+v, want completed", r.DelegationID, r.Status, r.Error)
			}
			completed = append(completed, d.end.Sub(d.start))
		}
	}
	rep.CompletedP50, rep.CompletedP99 = percentile(completed, 0.5), percentile(completed, 0.99)
	rep.CancelP50, rep.CancelP99 = percentile(cancelled, 0.5), percentile(cancelled, 0.99)
}

func wantTerminal(d *delRec) delegation.DelegationEventKind {
	if d.hang {
		return delegation.DelegationCancelled
	}
	return delegation.DelegationFinished
}

// checkBus: the raw bus view of every run — every delegation present,
// started first, exactly one terminal and nothing after it, Seq increasing,
// text deltas in order.
func checkBus(e *errs, runs []*runRec, dels []*delRec, wantText string, rep *report) {
	byRun := map[*runRec][]*delRec{}
	for _, d := range dels {
		byRun[d.run] = append(byRun[d.run], d)
	}
	for _, r := range runs {
		rep.BusEvents += len(r.events)
		var lastSeq uint64
		per := map[string][]delegation.DelegationEvent{}
		for _, ev := range r.events {
			if ev.Seq <= lastSeq {
				e.add("bus-order", "run %d: seq %d after %d", r.idx, ev.Seq, lastSeq)
			}
			lastSeq = ev.Seq
			if ev.RunID != r.h.RunID() {
				e.add("bus-run", "run %d: event of run %s", r.idx, ev.RunID)
			}
			per[ev.DelegationID] = append(per[ev.DelegationID], ev)
		}
		for _, d := range byRun[r] {
			id := d.res.DelegationID
			evs := per[id]
			delete(per, id)
			if len(evs) == 0 {
				e.add("bus-lost", "run %d: no event of delegation %s", r.idx, id)
				continue
			}
			if evs[0].Kind != delegation.DelegationStarted {
				e.add("bus-order", "delegation %s: first event %s", id, evs[0].Kind)
			}
			terms := 0
			var text strings.Builder
			for i, ev := range evs {
				if ev.Kind.Terminal() {
					terms++
					if ev.Kind != wantTerminal(d) {
						e.add("bus-terminal", "delegation %s: terminal %s, want %s", id, ev.Kind, wantTerminal(d))
					}
					if i != len(evs)-1 {
						e.add("bus-order", "delegation %s: %d events after the terminal one (%s)", id, len(evs)-1-i, evs[i+1].Kind)
					}
				}
				if ev.ParentToolCallID != d.parent {
					e.add("bus-correlation", "delegation %s: parent %q, want %q", id, ev.ParentToolCallID, d.parent)
				}
				if ev.Kind == delegation.DelegationTextDelta {
					text.WriteString(ev.Delta)
				}
			}
			if terms != 1 {
				e.add("bus-terminal", "delegation %s: %d terminal events, want 1", id, terms)
			}
			if !d.hang && text.String() != wantText {
				e.add("bus-text", "delegation %s: text %q, want %q", id, text.String(), wantText)
			}
		}
		for id := range per {
			e.add("bus-stray", "run %d: events of unknown delegation %s", r.idx, id)
		}
	}
}

type muxEvent struct {
	id    uint64
	name  string
	value map[string]any
}

// checkMux: the UI view — frame ids strictly increasing, the stream valid
// AG-UI, per delegation: real (not synthesized) started first and exactly
// one real terminal last, deltas in order; each parent tool result after
// its delegation's terminal.
func checkMux(e *errs, runs []*runRec, dels []*delRec, wantText string, rep *report) {
	byRun := map[*runRec][]*delRec{}
	for _, d := range dels {
		byRun[d.run] = append(byRun[d.run], d)
	}
	for _, r := range runs {
		rep.MuxFrames += len(r.frames)
		var sse bytes.Buffer
		var lastID uint64
		per := map[string][]muxEvent{}
		terminalAt := map[string]uint64{} // delegation -> frame id of its terminal
		resultAt := map[string]uint64{}   // tool call -> frame id of its result
		for _, f := range r.frames {
			if f.ID <= lastID {
				e.add("mux-order", "run %d: frame id %d after %d", r.idx, f.ID, lastID)
			}
			lastID = f.ID
			fmt.Fprintf(&sse, "id: %d\ndata: %s\n\n", f.ID, f.Data)
			var m struct {
				Name       string         `json:"name"`
				Value      map[string]any `json:"value"`
				ToolCallID string         `json:"toolCallId"`
			}
			if err := json.Unmarshal(f.Data, &m); err != nil {
				e.add("mux-json", "run %d: frame %d: %v", r.idx, f.ID, err)
				continue
			}
			switch {
			case f.Type == "CUSTOM" && strings.HasPrefix(m.Name, "subagent."):
				id, _ := m.Value["delegationId"].(string)
				per[id] = append(per[id], muxEvent{id: f.ID, name: m.Name, value: m.Value})
				if delegation.DelegationEventKind(m.Name).Terminal() {
					terminalAt[id] = f.ID
				}
			case f.Type == "TOOL_CALL_RESULT":
				resultAt[m.ToolCallID] = f.ID
			}
		}
		if n := len(r.frames); n == 0 || r.frames[n-1].Type != "RUN_FINISHED" {
			e.add("mux-end", "run %d: stream does not end with RUN_FINISHED", r.idx)
		}
		if frames, err := aguiverify.Frames(&sse); err != nil {
			e.add("mux-agui", "run %d: %v", r.idx, err)
		} else if err := aguiverify.Verify(frames, aguiverify.AllowUnnumberedFrames()); err != nil {
			e.add("mux-agui", "run %d: stream does not validate: %v", r.idx, err)
		}
		for _, d := range byRun[r] {
			id := d.res.DelegationID
			evs := per[id]
			delete(per, id)
			if len(evs) == 0 {
				e.add("mux-lost", "run %d: no frame of delegation %s", r.idx, id)
				continue
			}
			if evs[0].name != string(delegation.DelegationStarted) {
				e.add("mux-order", "delegation %s: first frame %s", id, evs[0].name)
			}
			terms := 0
			var text strings.Builder
			for i, ev := range evs {
				if ev.value["synthesized"] == true {
					e.add("mux-synthesized", "delegation %s: the mux synthesized %s (the delegator's event was lost or late)", id, ev.name)
				}
				if delegation.DelegationEventKind(ev.name).Terminal() {
					terms++
					if ev.name != string(wantTerminal(d)) {
						e.add("mux-terminal", "delegation %s: terminal %s, want %s", id, ev.name, wantTerminal(d))
					}
					if i != len(evs)-1 {
						e.add("mux-order", "delegation %s: %d frames after the terminal one", id, len(evs)-1-i)
					}
				}
				if ev.value["parentToolCallId"] != d.parent {
					e.add("mux-correlation", "delegation %s: parentToolCallId %v, want %s", id, ev.value["parentToolCallId"], d.parent)
				}
				if ev.name == string(delegation.DelegationTextDelta) {
					s, _ := ev.value["delta"].(string)
					text.WriteString(s)
				}
			}
			if terms != 1 {
				e.add("mux-terminal", "delegation %s: %d terminal frames, want 1", id, terms)
			}
			if !d.hang && text.String() != wantText {
				e.add("mux-text", "delegation %s: text %q, want %q", id, text.String(), wantText)
			}
			if res, term := resultAt[d.parent], terminalAt[id]; res == 0 || term == 0 || res < term {
				e.add("mux-hold", "run %d: TOOL_CALL_RESULT %s at %d, delegation terminal at %d", r.idx, d.parent, res, term)
			}
		}
		for id := range per {
			e.add("mux-stray", "run %d: frames of unknown delegation %q", r.idx, id)
		}
	}
}

// checkRemote: every delegation's remote task is completed (normal) or
// canceled (hanging) on its fake agent, CancelTask went exactly to the
// hanging ones, and the agents hold no task the host does not know.
func checkRemote(ctx context.Context, e *errs, servers []*fakea2a.Server, specs []registry.RemoteAgentSpec, dels []*delRec, rep *report) {
	cancels := map[string]int{}
	known := map[string]bool{}
	for _, s := range servers {
		for _, rq := range s.RequestsFor("CancelTask") {
			cancels[string(rq.TaskID)]++
			rep.CancelRequests++
		}
	}
	clients := make([]*a2aclient.Client, len(servers))
	for i, s := range servers {
		c, err := a2aclient.NewClient(ctx, s.CardURL(), a2aclient.Options{AuthRef: specs[i].AuthRef})
		if err != nil {
			e.add("remote", "checker client for %s: %v", specs[i].Key, err)
			return
		}
		defer func() { _ = c.Close() }()
		clients[i] = c
	}
	jobs := make(chan *delRec)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for d := range jobs {
				id := d.res.RemoteTaskID
				task, err := clients[d.server].GetTask(ctx, a2aclient.GetTaskRequest{TaskID: a2a.TaskID(id)})
				if err != nil {
					e.add("remote-state", "delegation %s: GetTask %s: %v", d.res.DelegationID, id, err)
					continue
				}
				want := a2a.TaskStateCompleted
				if d.hang {
					want = a2a.TaskStateCanceled
				}
				if task.Status.State != want {
					e.add("remote-state", "delegation %s: remote task %s is %s, want %s", d.res.DelegationID, id, task.Status.State, want)
				}
			}
		})
	}
	for _, d := range dels {
		id := d.res.RemoteTaskID
		if id == "" {
			continue
		}
		known[id] = true
		switch n := cancels[id]; {
		case d.hang && n == 0:
			e.add("remote-cancel", "hanging delegation %s: no CancelTask for task %s", d.res.DelegationID, id)
		case !d.hang && n > 0:
			e.add("remote-cancel", "completed delegation %s: %d CancelTask for task %s", d.res.DelegationID, n, id)
		}
		jobs <- d
	}
	close(jobs)
	wg.Wait()
	for i, s := range servers {
		for _, id := range s.Tasks() {
			if !known[string(id)] {
				e.add("remote-orphan", "agent %s holds task %s that no delegation reported", specs[i].Key, id)
				if t, err := clients[i].GetTask(ctx, a2aclient.GetTaskRequest{TaskID: id}); err == nil && !a2aclient.IsTerminal(t.Status.State) {
					e.add("remote-orphan", "agent %s: orphan task %s is still %s", specs[i].Key, id, t.Status.State)
				}
			}
		}
	}
}

// countingHandler counts warnings and errors and discards everything.
type countingHandler struct{ n *atomic.Int64 }

func (h countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h countingHandler) Handle(context.Context, slog.Record) error {
	h.n.Add(1)
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }
