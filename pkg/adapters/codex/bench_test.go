package codex_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/codex"
)

// BenchmarkParser measures parser throughput (MB/s) over every fixture.
func BenchmarkParser(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	var lines [][]byte
	size := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
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
		p := codex.NewParser()
		for _, l := range lines {
			_ = p.ParseLine(l, emit)
		}
		p.Finish(agentadaptor.ExitStatus{}, emit)
	}
}
