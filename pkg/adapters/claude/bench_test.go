package claude_test

import (
	"context"
	"io"
	"os/exec"

	"bytes"
	"github.com/seed0634/agentadaptor/internal/fakemodel"
	"os"
	"path/filepath"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/claude"
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
		p := claude.NewParser(nil)
		for _, l := range lines {
			_ = p.ParseLine(l, emit)
		}
		p.Finish(agentadaptor.ExitStatus{}, emit)
	}
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
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := os.Environ()
	for k, v := range fakemodel.FakeCLIEnvFor(fixture(b, "text.jsonl"), "replay") {
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
