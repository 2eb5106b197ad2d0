package relaybench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// bareEnv makes the test binary the bare relay process (see TestMain).
const bareEnv = "BENCHE2E_TEST_BARE"

func TestMain(m *testing.M) {
	if os.Getenv(bareEnv) == "1" {
		if len(os.Args) > 1 && os.Args[1] == "nats" {
			os.Exit(NATSMain(os.Args[2:]))
		}
		os.Exit(BareMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the whole harness briefly — the remote, the systems, the
// load client at concurrency 1 and 10, a fan-out of 2 runs × 3 delegations
// (the project's parent through a parallel: step), the fixed-cost pass and
// a short long delegation — so that the benchmark keeps working. It asserts no timing: only that every
// system delivered every chunk once and every run ended with its terminal
// event(s).
func TestSmoke(t *testing.T) {
	repo, err := testenv.NodePackages("@a2a-js/sdk", "@ag-ui/a2a", "@ag-ui/client", "@ag-ui/core", "@ag-ui/encoder")
	testenv.Require(t, "node with @a2a-js/sdk and @ag-ui/a2a", err)
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Require(t, "the go command (to build cmd/agentadaptor)", err)
	}
	dir := t.TempDir()
	bin, _, err := BuildAgentadaptor(repo, filepath.Join(dir, "bin"), false)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Repo: repo, Agentadaptor: bin, BareCmd: []string{self}, BareEnv: []string{bareEnv + "=1"},
		WorkDir: filepath.Join(dir, "work"), Logf: t.Logf}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	systems := append(append([]string{}, Systems...), "project-nats")
	cfg := Config{
		Systems:      systems,
		Levels:       []int{1, 10},
		Stream:       Stream{Chunks: 12, Interval: 2 * time.Millisecond, Size: 48},
		Runs:         func(c int) int { return max(c, 2) },
		Long:         300,
		LongRepeat:   1,
		LevelTimeout: 2 * time.Minute,
		FanOut:       []FanShape{{Runs: 2, Width: 3}},
		FanStream:    Stream{Chunks: 12, Interval: 2 * time.Millisecond, Size: 48},
		Fixed:        FixedConfig{Runs: 2, Concurrency: 2, Width: 2, Short: 2, Long: 4, Interval: 2 * time.Millisecond, Size: 48},
	}
	res, err := Run(ctx, env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.Levels), len(cfg.Levels)*len(systems); got != want {
		t.Fatalf("%d level results, want %d", got, want)
	}
	for _, lr := range res.Levels {
		want := lr.Runs * cfg.Stream.Chunks
		if lr.Chunks != want || lr.Lost != 0 || lr.Duplicates != 0 || lr.LostTerminals != 0 || lr.Errors != 0 {
			t.Errorf("%s at %d: %d/%d chunks, %d lost, %d duplicated, %d lost terminals, %d errors (first: %s)",
				lr.System, lr.Concurrency, lr.Chunks, want, lr.Lost, lr.Duplicates, lr.LostTerminals, lr.Errors, lr.FirstError)
		}
		// project-nats: every run was also followed on the other replica.
		if lr.System == "project-nats" && (lr.FollowerChunks != want || lr.FollowerLost != 0 || lr.FollowerErrors != 0) {
			t.Errorf("project-nats at %d, follower: %d/%d chunks, %d lost, %d failed follows (first: %s)",
				lr.Concurrency, lr.FollowerChunks, want, lr.FollowerLost, lr.FollowerErrors, lr.FollowerFirstError)
		}
	}
	if len(res.Long) != len(systems) {
		t.Fatalf("%d long results, want %d", len(res.Long), len(systems))
	}
	for _, lr := range res.Long {
		if lr.Chunks != lr.Expected || lr.Lost != 0 || !lr.Terminal || lr.Error != "" {
			t.Errorf("%s long: %d/%d chunks, %d lost, terminal %v, error %q", lr.System, lr.Chunks, lr.Expected, lr.Lost, lr.Terminal, lr.Error)
		}
	}
	if got, want := len(res.FanOut), len(cfg.FanOut)*len(systems); got != want {
		t.Fatalf("%d fan-out results, want %d", got, want)
	}
	for _, fr := range res.FanOut {
		want := fr.Shape.Streams() * cfg.FanStream.Chunks
		if fr.Chunks != want || fr.Lost != 0 || fr.Duplicates != 0 || fr.LostTerminals != 0 || fr.Errors != 0 {
			t.Errorf("%s fan-out %s: %d/%d chunks, %d lost, %d duplicated, %d runs without terminal, %d errors (first: %s)",
				fr.System, fr.Shape, fr.Chunks, want, fr.Lost, fr.Duplicates, fr.LostTerminals, fr.Errors, fr.FirstError)
		}
	}
	if got, want := len(res.Fixed), len(fixedSystems(systems)); got != want {
		t.Fatalf("%d fixed-cost results, want %d", got, want)
	}
	for _, fr := range res.Fixed {
		if fr.Errors != 0 || len(fr.Rounds) != 1 || fr.ShortOne.Runs != cfg.Fixed.Runs || fr.LongOne.Runs != cfg.Fixed.Runs || fr.ShortWide.Runs != cfg.Fixed.Runs {
			t.Errorf("%s fixed cost: %d failed runs (first: %s), %d rounds (want 1), runs %d/%d/%d of %d", fr.System, fr.Errors, fr.FirstError,
				len(fr.Rounds), fr.ShortOne.Runs, fr.LongOne.Runs, fr.ShortWide.Runs, cfg.Fixed.Runs)
		}
	}
	// The report renders (its numbers are not checked).
	if md := res.Markdown(); len(md) == 0 {
		t.Error("empty report")
	}
	t.Logf("\n%s", res.Markdown())
}
