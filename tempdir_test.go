package agentadaptor_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// onDemand is the shell adapter with agentadaptor.TempDirOnDemand; with
// write it asks for the run's temp dir and writes a file there.
type onDemand struct {
	agentadaptor.Adapter
	write bool
	dirs  chan string
}

func (onDemand) TempDirOnDemand() {}

func (a onDemand) Prepare(ctx context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	if req.TempDir != "" {
		a.dirs <- "created up front: " + req.TempDir
	}
	if a.write {
		dir, err := req.MakeTempDir()
		if err != nil {
			return nil, err
		}
		if again, _ := req.MakeTempDir(); again != dir {
			a.dirs <- "a second MakeTempDir returned another dir: " + again
		}
		if err := os.WriteFile(filepath.Join(dir, "profile.json"), []byte("{}"), 0o600); err != nil {
			return nil, err
		}
		a.dirs <- dir
	}
	return a.Adapter.Prepare(ctx, req)
}

// An adapter with TempDirOnDemand gets no temp dir unless it asks; one it
// asks for is private and removed after the run like any run's temp dir
// (docs/design.md#order-of-a-run).
func TestTempDirOnDemand(t *testing.T) {
	for _, write := range []bool{false, true} {
		root := t.TempDir()
		a := onDemand{Adapter: shell(textScript("hi")), write: write, dirs: make(chan string, 4)}
		res, err := newSDK(t, a).Run(testCtx(t), "p", agentadaptor.WithTempRoot(root))
		if err != nil || res.Status != agentadaptor.StatusCompleted {
			t.Fatalf("write=%v: %v %+v", write, err, res)
		}
		close(a.dirs)
		var dirs []string
		for d := range a.dirs {
			dirs = append(dirs, d)
		}
		switch {
		case !write && len(dirs) != 0:
			t.Errorf("no temp dir asked for, got %v", dirs)
		case write && (len(dirs) != 1 || filepath.Dir(dirs[0]) != root):
			t.Errorf("asked for a temp dir under %s, got %v", root, dirs)
		}
		if left, _ := os.ReadDir(root); len(left) != 0 {
			t.Errorf("write=%v: %d entries left under the temp root after the run", write, len(left))
		}
	}
}
