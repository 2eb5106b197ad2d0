package claude_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/claude"
)

// BenchmarkParser measures parser throughput (MB/s) over every fixture.
func BenchmarkParser(b *testing.B) {
	adaptertest.ParserBenchmark(b, func() *claude.Parser { return claude.NewParser(nil) })
}

// BenchmarkRunSDK and BenchmarkRunDirect compare one SDK run of the fake CLI
// (replaying testdata/text.jsonl) with spawning the same fake CLI directly
// and reading its stdout: the difference is the SDK's per-run overhead.
func BenchmarkRunSDK(b *testing.B) {
	a := fakeAdapter(b, claude.Config{})
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
	if err != nil {
		b.Fatal(err)
	}
	env := fakeEnv(b, "text.jsonl", "replay")
	wd := b.TempDir()
	ctx := context.Background()
	for b.Loop() {
		res, err := sdk.Run(ctx, "hi", env, agentadaptor.WithWorkDir(wd))
		if err != nil || res.Status != agentadaptor.StatusCompleted {
			b.Fatalf("%v %+v", err, res)
		}
	}
}

func BenchmarkRunDirect(b *testing.B) {
	exe := adaptertest.TestBinary(b)
	env := os.Environ()
	for k, v := range fakemodel.FakeCLIEnvFor(adaptertest.Fixture(b, "text.jsonl"), "replay") {
		env = append(env, k+"="+v)
	}
	for b.Loop() {
		cmd := exec.Command(exe, "-p", "--output-format", "stream-json", "--verbose", "--", "hi")
		cmd.Env = env
		cmd.Dir = b.TempDir()
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}
