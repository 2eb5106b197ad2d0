package relaybench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Main is the benchmark's command line (bench/e2e): `bare ...` runs the
// bare relay process (see [BareMain]); anything else runs the benchmark.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "bare" {
		return BareMain(args[1:])
	}
	if len(args) > 0 && args[0] == "nats" {
		return NATSMain(args[1:])
	}
	fs := flag.NewFlagSet("bench-e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	levels := fs.String("levels", "1,10,100,1000", "concurrency levels (concurrent delegations), comma-separated")
	systems := fs.String("systems", strings.Join(Systems, ","), "systems to measure: project, project-nice (serve with parent.nice: -parent-nice), project-nats (serve with cluster.nats_url on a local nats-server), bare, peer")
	parentNice := fs.Int("parent-nice", DefaultParentNice, "project-nice's parent.nice, 1..19")
	withNATS := fs.Bool("nats", false, "also measure project-nats: the project as one replica of a cluster on a local nats-server with JetStream")
	chunks := fs.Int("chunks", 50, "chunks per delegation")
	interval := fs.Duration("interval", 20*time.Millisecond, "pause between a delegation's chunks at the remote (ms resolution)")
	size := fs.Int("size", 48, "bytes of text per chunk")
	minRuns := fs.Int("min-runs", 20, "at least this many delegations per level")
	rounds := fs.Int("rounds", 2, "delegations per level = max(rounds × concurrency, min-runs)")
	maxRuns := fs.Int("max-runs", 1000, "cap delegations per level (0: none)")
	fanout := fs.String("fanout", DefaultFanOut, "fan-out shapes RUNSxDELEGATIONS[:CHUNKS@INTERVAL] (a shape's own stream instead of -fanout-chunks and -fanout-interval), comma-separated (\"\": none)")
	fanChunks := fs.Int("fanout-chunks", 500, "chunks per delegation of the fan-out shapes")
	fanInterval := fs.Duration("fanout-interval", 20*time.Millisecond, "pause between a fan-out delegation's chunks")
	fanRounds := fs.Int("fanout-rounds", 3, "rounds of each fan-out shape, the systems interleaved (the report gives each figure's median)")
	fixedRuns := fs.Int("fixed-runs", 100, "runs per shape of the fixed-cost pass (0: skip it)")
	fixedConc := fs.Int("fixed-concurrency", 10, "concurrent runs of the fixed-cost pass")
	fixedRounds := fs.Int("fixed-rounds", 3, "rounds of the fixed-cost pass, the systems taking turns (the report gives each figure's median)")
	fixedWidth := fs.Int("fixed-width", 10, "delegations per run of the fixed-cost pass's wide shape (at least 2)")
	fixedChunks := fs.String("fixed-chunks", "2,102", "chunks of the fixed-cost pass's short and long delegations")
	long := fs.Int("long", 20000, "chunks of the long delegation (0: skip it)")
	longRepeat := fs.Int("long-repeat", 3, "long delegations per system (the median is reported)")
	out := fs.String("out", filepath.Join("bench", "e2e", "out"), "directory for results, logs and built binaries")
	doc := fs.String("doc", "", "also rewrite the generated section of this doc (docs/benchmarks.md)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of serve under -profile-level load to this file (and pprof -top beside it)")
	profileLevel := fs.Int("profile-level", 100, "concurrency of the profiling pass")
	profileShape := fs.String("profile-shape", "", "load of the profiling pass instead of -profile-level: level:N, fanout:RxD or fixed:D (D delegations of the fixed pass's short chunks per run)")
	profileSeconds := fs.Int("profile-seconds", 15, "length of the CPU profile")
	bin := fs.String("agentadaptor", "", "a built cmd/agentadaptor (default: built into -out)")
	node := fs.String("node", "node", "the node executable")
	timeout := fs.Duration("level-timeout", 10*time.Minute, "bound of one level of one system")
	command := fs.String("command", "", "the command line to record in the report (default: this one)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "bench-e2e: "+format+"\n", a...) }
	if *parentNice < 1 || *parentNice > 19 {
		logf("-parent-nice %d is not in 1..19", *parentNice)
		return 2
	}
	cfg := Config{Stream: Stream{Chunks: *chunks, Interval: *interval, Size: *size}, Long: *long, LongRepeat: *longRepeat,
		ProfileLevel: *profileLevel, ProfileShape: *profileShape, ProfileSeconds: *profileSeconds, LevelTimeout: *timeout, ParentNice: *parentNice,
		FanStream: Stream{Chunks: *fanChunks, Interval: *fanInterval, Size: *size}, FanRounds: *fanRounds}
	if *fanRounds < 1 {
		logf("-fanout-rounds %d: want at least 1", *fanRounds)
		return 2
	}
	var err error
	if cfg.FanOut, err = ParseFanShapes(*fanout); err != nil {
		logf("-fanout: %v", err)
		return 2
	}
	if *fixedRuns > 0 {
		short, long, ok := strings.Cut(*fixedChunks, ",")
		sn, err1 := strconv.Atoi(strings.TrimSpace(short))
		ln, err2 := strconv.Atoi(strings.TrimSpace(long))
		if !ok || err1 != nil || err2 != nil || sn < 1 || ln <= sn || *fixedWidth < 2 || *fixedConc < 1 || *fixedRounds < 1 {
			logf("-fixed-chunks wants SHORT,LONG with 1 <= SHORT < LONG, -fixed-width at least 2, -fixed-concurrency and -fixed-rounds at least 1")
			return 2
		}
		cfg.Fixed = FixedConfig{Runs: *fixedRuns, Rounds: *fixedRounds, Concurrency: *fixedConc, Width: *fixedWidth, Short: sn, Long: ln, Interval: *interval, Size: *size}
	}
	if *profileShape != "" {
		if _, err := parseProfileShape(&cfg); err != nil {
			logf("-profile-shape: %v", err)
			return 2
		}
	}
	for s := range strings.SplitSeq(*levels, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			logf("bad -levels entry %q", s)
			return 2
		}
		cfg.Levels = append(cfg.Levels, n)
	}
	for s := range strings.SplitSeq(*systems, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if _, err := kindOf(s); err != nil {
				logf("%v", err)
				return 2
			}
			cfg.Systems = append(cfg.Systems, s)
		}
	}
	if *withNATS && !slices.Contains(cfg.Systems, "project-nats") {
		cfg.Systems = append(cfg.Systems, "project-nats")
	}
	cfg.Runs = func(c int) int {
		n := max(*rounds*c, *minRuns)
		if *maxRuns > 0 {
			n = min(n, *maxRuns)
		}
		return max(n, c)
	}
	repo, err := repoRoot()
	if err != nil {
		logf("%v", err)
		return 2
	}
	outDir, _ := filepath.Abs(*out)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		logf("%v", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		logf("%v", err)
		return 1
	}
	env := &Env{Repo: repo, Node: *node, BareCmd: []string{self, "bare"}, WorkDir: filepath.Join(outDir, "work"), Logf: logf}
	if *bin != "" {
		env.Agentadaptor, _ = filepath.Abs(*bin)
	}
	if env.Agentadaptor == "" || *cpuprofile != "" {
		logf("building cmd/agentadaptor into %s", filepath.Join(outDir, "bin"))
		plain, prof, err := BuildAgentadaptor(repo, filepath.Join(outDir, "bin"), *cpuprofile != "")
		if err != nil {
			logf("%v", err)
			return 1
		}
		if env.Agentadaptor == "" {
			env.Agentadaptor = plain
		}
		cfg.ProfileBinary = prof
	}
	if *cpuprofile != "" {
		cfg.ProfileOut, _ = filepath.Abs(*cpuprofile)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := Run(ctx, env, cfg)
	if res == nil {
		logf("%v", err)
		return 1
	}
	res.Machine = MachineDescription(*node)
	res.Command = *command
	if res.Command == "" {
		res.Command = strings.Join(append([]string{"go run ./bench/e2e"}, args...), " ")
	}
	md := res.Markdown()
	if cfg.ProfileOut != "" && err == nil {
		top, perr := exec.Command("go", "tool", "pprof", "-top", "-nodecount=30", cfg.ProfileBinary, cfg.ProfileOut).CombinedOutput()
		if perr != nil {
			logf("go tool pprof: %v", perr)
		}
		res.Profile = string(top)
		_ = os.WriteFile(cfg.ProfileOut+".top.txt", top, 0o644)
		cum, _ := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=60", cfg.ProfileBinary, cfg.ProfileOut).CombinedOutput()
		_ = os.WriteFile(cfg.ProfileOut+".cum.txt", cum, 0o644)
		logf("CPU profile: %s (pprof -top in %s.top.txt, -cum in %s.cum.txt)", cfg.ProfileOut, cfg.ProfileOut, cfg.ProfileOut)
		heap := HeapProfilePath(cfg.ProfileOut)
		if htop, herr := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=40", cfg.ProfileBinary, heap).CombinedOutput(); herr == nil {
			_ = os.WriteFile(heap+".top.txt", htop, 0o644)
			logf("heap profile: %s (pprof -top in %s.top.txt)", heap, heap)
		}
	}
	fmt.Fprintf(stdout, "Machine: %s\nCommand: %s\n\n%s", res.Machine, res.Command, md)
	_ = os.WriteFile(filepath.Join(outDir, "results.md"), []byte(md), 0o644)
	if b, jerr := json.MarshalIndent(res, "", "  "); jerr == nil {
		_ = os.WriteFile(filepath.Join(outDir, "results.json"), b, 0o644)
	}
	if err != nil {
		logf("stopped early: %v", err)
		return 1
	}
	if *doc != "" {
		if err := res.WriteDoc(*doc); err != nil {
			logf("%v", err)
			return 1
		}
		logf("wrote %s", *doc)
	}
	return 0
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "bench", "e2e", "remote.mjs")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run from the repository (no go.mod with bench/e2e/remote.mjs above %s)", dir)
		}
		dir = parent
	}
}
