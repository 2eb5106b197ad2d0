package relaybench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// pprofOverlay is the file the profiling build of cmd/agentadaptor gets
// through `go build -overlay` (the product's sources are not touched): with
// AGENTADAPTOR_BENCH_PPROF=ADDR, serve also serves net/http/pprof on ADDR.
// The scripted parents are the same binary re-executed; they skip it.
const pprofOverlay = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("` + ProfileEnv + `"); addr != "" && os.Getenv("AGENTADAPTOR_SCRIPTED_AGENT") == "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
`

// BuildAgentadaptor builds cmd/agentadaptor into dir: the plain binary, and
// with pprof also a profiling one (see pprofOverlay). It returns their paths.
func BuildAgentadaptor(repo, dir string, pprof bool) (plain, profiling string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	plain = filepath.Join(dir, "agentadaptor")
	if err := goBuild(repo, plain); err != nil {
		return "", "", err
	}
	if !pprof {
		return plain, "", nil
	}
	// The overlay's source lives in a directory the go command's ./...
	// skips (a leading "_"): dir may be inside the module (bench/e2e/out),
	// and a stray main-less Go file there would break `go build ./...`
	// and `go test ./...` of the repository until it is removed.
	srcDir := filepath.Join(dir, "_overlay")
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return "", "", err
	}
	src := filepath.Join(srcDir, "zz_bench_pprof.go")
	if err := os.WriteFile(src, []byte(pprofOverlay), 0o644); err != nil {
		return "", "", err
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(repo, "cmd", "agentadaptor", "zz_bench_pprof.go"): src}})
	ovf := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovf, ov, 0o644); err != nil {
		return "", "", err
	}
	profiling = filepath.Join(dir, "agentadaptor-pprof")
	if err := goBuild(repo, profiling, "-overlay", ovf); err != nil {
		return "", "", err
	}
	return plain, profiling, nil
}

func goBuild(repo, out string, flags ...string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, "./cmd/agentadaptor")
	cmd := exec.Command("go", args...)
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", args, err, b)
	}
	return nil
}
