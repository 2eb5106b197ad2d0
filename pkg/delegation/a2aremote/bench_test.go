package a2aremote

import (
	"strconv"
	"testing"
)

// BenchmarkMapChunk maps streamed assistant-output chunks (the per-chunk
// work of a delegation's mapping).
func BenchmarkMapChunk(b *testing.B) {
	m := streamingMapper(nil)
	m.Map(chunk(ArtifactAssistantOutput, "out", "start", false, false))
	text := "48 bytes of streamed text, as the bench remote. "
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Map(chunk(ArtifactAssistantOutput, "out", text+strconv.Itoa(i), true, false))
	}
}
