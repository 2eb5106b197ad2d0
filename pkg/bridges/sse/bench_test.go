package sse_test

import (
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

// benchPayloads is one run's worth of a typical mix: streamed text, a tool
// call with streamed args and a result, custom payloads, usage.
func benchPayloads() []agentadaptor.StreamPayload {
	now := time.Now()
	ps := []agentadaptor.StreamPayload{{Kind: agentadaptor.KindRunStarted}}
	for i := range 200 {
		ps = append(ps, agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: "msg_01", Delta: "some streamed words "})
		if i%50 == 49 {
			ps = append(ps,
				agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_" + string(rune('a'+i/50)), ToolName: "search"},
				agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallArgs, Delta: `{"q":"go"}`},
				agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallResult, ToolResult: "3 results"},
				agentadaptor.StreamPayload{Name: "subagent.text.delta", Raw: map[string]any{"delegationId": "del-1", "delta": "Searching..."}})
		}
	}
	ps = append(ps, agentadaptor.StreamPayload{Kind: agentadaptor.KindUsage, Usage: &agentadaptor.Usage{InputTokens: 100, OutputTokens: 50}},
		agentadaptor.StreamPayload{Kind: agentadaptor.KindRunFinished})
	for i := range ps {
		ps[i].Time = now
	}
	return ps
}

// BenchmarkTranslateAndEncode measures the AG-UI path of the SSE handler:
// translation, Validate, JSON encoding and SSE framing, per event written.
func BenchmarkTranslateAndEncode(b *testing.B) {
	ps := benchPayloads()
	var nEvents int
	var m0, m1 runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		tr := agui.NewTranslator(agui.Options{ThreadID: "t", RunID: "r"})
		enc := sse.NewEncoder(io.Discard)
		var buf []events.Event
		for _, p := range ps {
			buf = tr.AppendTranslate(buf[:0], p)
			for _, ev := range buf {
				if err := enc.WriteEvent(ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		nEvents += int(enc.LastID())
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(nEvents)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(nEvents), "allocs/event")
	b.ReportMetric(float64(nEvents)/float64(b.N), "events/op")
}

// BenchmarkRawEncode measures the raw protocol path (StreamPayload JSON).
func BenchmarkRawEncode(b *testing.B) {
	ps := benchPayloads()
	var n int
	var m0, m1 runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		enc := sse.NewEncoder(io.Discard)
		for _, p := range ps {
			if err := enc.WriteValue(p); err != nil {
				b.Fatal(err)
			}
		}
		n += len(ps)
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n), "allocs/event")
}
