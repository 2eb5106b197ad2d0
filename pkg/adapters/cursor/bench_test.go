package cursor_test

import (
	"testing"

	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/cursor"
)

// BenchmarkParser measures parser throughput (MB/s) over every fixture.
func BenchmarkParser(b *testing.B) {
	adaptertest.ParserBenchmark(b, func() *cursor.Parser { return cursor.NewParser(true) })
}
