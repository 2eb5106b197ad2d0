package codex_test

import (
	"testing"

	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/codex"
)

// BenchmarkParser measures parser throughput (MB/s) over every fixture.
func BenchmarkParser(b *testing.B) {
	adaptertest.ParserBenchmark(b, codex.NewParser)
}
