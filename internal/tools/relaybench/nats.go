package relaybench

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
)

// kindProjectNATS is the project with cluster.nats_url set: the same serve,
// one replica of a cluster on a local nats-server with JetStream on file
// storage (run by `bench-e2e nats`, see [NATSMain]). Its CPU "with
// children" includes the nats-server process's.
var kindProjectNATS = &systemKind{name: "project-nats", chunkFrame: kindProject.chunkFrame, needFinished: kindProject.needFinished}

// NATSMain runs a nats-server with JetStream (file storage under -dir)
// embedded in this process: it prints {"url": ...} on stdout and exits when
// its stdin closes.
func NATSMain(args []string) int {
	fs := flag.NewFlagSet("nats", flag.ContinueOnError)
	dir := fs.String("dir", "", "JetStream storage directory")
	if err := fs.Parse(args); err != nil || *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: bench-e2e nats -dir DIR")
		return 2
	}
	ns, err := natstest.Start(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ns.Stop()
	b, _ := json.Marshal(map[string]string{"url": ns.URL()})
	fmt.Println(string(b))
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
	}
	return 0
}

// startNATS starts `bench-e2e nats` with a fresh storage directory; it
// returns the process, the URL and the replicas' creds_ref (the server
// runs the README's configuration: natstest writes the replicas' seed
// into the storage directory).
func (e *Env) startNATS() (*proc, string, string, error) {
	dir, err := os.MkdirTemp(e.WorkDir, "jetstream-")
	if err != nil {
		return nil, "", "", err
	}
	dir = filepath.Clean(dir)
	p, u, err := e.start("nats", []string{e.BareCmd[0], "nats", "-dir", dir}, e.BareEnv, false, jsonURL)
	return p, u, "file:" + filepath.Join(dir, "agentadaptor.nk"), err
}

// clusterBlock is a project-nats replica's cluster block.
func clusterBlock(url, credsRef, replica string) string {
	return fmt.Sprintf("cluster: {nats_url: %q, replica: %s, creds_ref: %q}\n", url, replica, credsRef)
}
