package host_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func nodeValidate(t *testing.T, stream []byte) {
	t.Helper()
	root, err := testenv.NodePackages(testenv.AGUIPackages()...)
	if !testenv.Want(t, "node and the @ag-ui packages", err) {
		return
	}
	f := filepath.Join(t.TempDir(), "stream.sse")
	if err := os.WriteFile(f, stream, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(root, "tests/node/validate-agui.mjs"), f)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Node AG-UI validation failed: %v\n%s", err, out)
	}
}
