package host_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func nodeValidate(t *testing.T, stream []byte) {
	t.Helper()
	root, _ := filepath.Abs("../..")
	if _, err := os.Stat(filepath.Join(root, "node_modules/@ag-ui/core")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node_modules missing in CI: run scripts/deps.sh")
		}
		t.Log("node_modules missing: skipping the @ag-ui/core validation")
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
