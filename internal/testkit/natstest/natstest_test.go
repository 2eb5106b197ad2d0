package natstest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// The README ships exactly the configuration the tests run.
func TestREADMEShipsTheTestedConfiguration(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```conf\n"+Config+"```\n") {
		t.Fatalf("README.md's nats-server configuration (a ```conf block) is not internal/testkit/natstest/nats-server.conf:\n%s", Config)
	}
}

// The server refuses clients without the replicas' key, and the seed
// CredsRef names lets one in.
func TestServerRequiresTheReplicasKey(t *testing.T) {
	ns := New(t)
	if nc, err := nats.Connect(ns.URL(), nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Fatal("a client without credentials was let in")
	}
	other, _ := nkeys.CreateUser()
	pub, _ := other.PublicKey()
	if nc, err := nats.Connect(ns.URL(), nats.Timeout(5*time.Second), nats.Nkey(pub, other.Sign)); err == nil {
		nc.Close()
		t.Fatal("a client with another key was let in")
	}
	seed, err := os.ReadFile(strings.TrimPrefix(ns.CredsRef(), "file:"))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ = kp.PublicKey()
	nc, err := nats.Connect(ns.URL(), nats.Timeout(5*time.Second), nats.Nkey(pub, kp.Sign))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// Outside its permissions, a publish is refused.
	errs := make(chan error, 1)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	})
	if err := nc.Publish("elsewhere.x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	select {
	case err := <-errs:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Fatalf("publish outside the permissions: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a publish outside the permissions was not refused")
	}
}
