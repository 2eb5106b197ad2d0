package adaptertest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// Fixture returns the absolute path of testdata/name in the package under
// test.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Replay feeds the non-blank lines of testdata/name to p, then finishes it
// with exit, and returns the payloads, the outcome and the ParseLine errors.
func Replay(t testing.TB, name string, p agentadaptor.Parser, exit agentadaptor.ExitStatus) ([]agentadaptor.StreamPayload, agentadaptor.Outcome, []error) {
	t.Helper()
	data, err := os.ReadFile(Fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	var out []agentadaptor.StreamPayload
	emit := func(sp agentadaptor.StreamPayload) { out = append(out, sp) }
	var errs []error
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := p.ParseLine(l, emit); err != nil {
			errs = append(errs, err)
		}
	}
	return out, p.Finish(exit, emit), errs
}

// Names lists the payloads' kinds in order, a custom payload as
// "custom:<name>".
func Names(ps []agentadaptor.StreamPayload) []string {
	var out []string
	for _, p := range ps {
		if p.Kind == agentadaptor.KindCustom {
			out = append(out, "custom:"+p.Name)
		} else {
			out = append(out, string(p.Kind))
		}
	}
	return out
}

// ParserBenchmark measures parser throughput (MB/s) over every
// testdata/*.jsonl fixture, with a fresh parser from newParser per iteration.
func ParserBenchmark[P agentadaptor.Parser](b *testing.B, newParser func() P) {
	b.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	var lines [][]byte
	size := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for l := range bytes.SplitSeq(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines = append(lines, l)
				size += len(l) + 1
			}
		}
	}
	emit := func(agentadaptor.StreamPayload) {}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		p := newParser()
		for _, l := range lines {
			_ = p.ParseLine(l, emit)
		}
		p.Finish(agentadaptor.ExitStatus{}, emit)
	}
}

// TestBinary returns the running test binary, to stand in for an agent CLI:
// a test package whose TestMain lets it act as a fake CLI (as
// internal/testkit/fakemodel.MaybeRunFakeCLI does) sets it as the adapter's binary.
func TestBinary(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// WithTestBinary builds an adapter with [TestBinary] as its CLI, failing t
// when build does.
func WithTestBinary[A any](t testing.TB, build func(binary string) (A, error)) A {
	t.Helper()
	a, err := build(TestBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// RunToEnd starts prompt on sdk, collects the whole stream, checks its
// invariants ([CheckStream]) and returns the payloads and the run's result.
func RunToEnd(ctx context.Context, t testing.TB, sdk *agentadaptor.SDK, prompt string, opts ...agentadaptor.RunOption) ([]agentadaptor.StreamPayload, *agentadaptor.RunResult) {
	t.Helper()
	h, err := sdk.Start(ctx, prompt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ps := Collect(ctx, t, h)
	CheckStream(t, h.RunID(), ps)
	res, _ := h.Wait(ctx)
	return ps, res
}

// HasDiagnostic reports whether ps holds a diagnostic payload with code.
func HasDiagnostic(ps []agentadaptor.StreamPayload, code string) bool {
	for _, p := range ps {
		if p.Kind == agentadaptor.KindDiagnostic && p.Diagnostic.Code == code {
			return true
		}
	}
	return false
}

// CheckConfigError fails t unless err is a *agentadaptor.ConfigError on
// field.
func CheckConfigError(t testing.TB, err error, field string) {
	t.Helper()
	var ce *agentadaptor.ConfigError
	if !errors.As(err, &ce) || ce.Field != field {
		t.Fatalf("err = %v, want ConfigError on %s", err, field)
	}
}
