package relaybench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// systemKind is one relay under test and how the load client reads it.
type systemKind struct {
	name string
	// chunkFrame is a substring of exactly the frames that carry chunks.
	chunkFrame []byte
	// needFinished, when non-nil, is a frame the stream must hold besides
	// RUN_FINISHED, once per delegation, for the run to count as
	// terminated; fanFinished is that frame only when a run carries
	// several streams (the bare relay's fan-out).
	needFinished, fanFinished []byte
}

// finishedFrame is the frame that ends each of width streams of a run
// (nil: RUN_FINISHED alone ends the run).
func (k *systemKind) finishedFrame(width int) []byte {
	if k.needFinished != nil {
		return k.needFinished
	}
	if width > 1 {
		return k.fanFinished
	}
	return nil
}

var (
	// Project: CUSTOM subagent.text.delta events nested in the parent run;
	// a delegation ends with subagent.finished, the run with RUN_FINISHED.
	kindProject = &systemKind{name: "project", chunkFrame: []byte(`"name":"subagent.text.delta"`), needFinished: []byte(`"name":"subagent.finished"`)}
	// Bare: one CUSTOM subagent.text.delta per chunk, then RUN_FINISHED;
	// in a fan-out, a CUSTOM subagent.finished ends each stream.
	kindBare = &systemKind{name: "bare", chunkFrame: []byte(`"name":"subagent.text.delta"`), fanFinished: []byte(`"name":"subagent.finished"`)}
	// Peer: @ag-ui/a2a 0.0.6 renders each artifact update as a RAW event
	// holding the A2A event, then RUN_FINISHED.
	kindPeer = &systemKind{name: "peer", chunkFrame: []byte(`"kind":"artifact-update"`)}
	// ProjectNice: the project with parent.nice set (Config.ParentNice):
	// the same serve and frames, its parent processes at a lower CPU
	// priority.
	kindProjectNice = &systemKind{name: "project-nice", chunkFrame: kindProject.chunkFrame, needFinished: kindProject.needFinished}
)

// Systems lists the systems in report order.
var Systems = []string{"project", "project-nice", "bare", "peer"}

// DefaultParentNice is project-nice's parent.nice when Config.ParentNice
// is 0 (bench/e2e/README.md says why this value).
const DefaultParentNice = 19

func kindOf(name string) (*systemKind, error) {
	switch name {
	case "project":
		return kindProject, nil
	case "project-nice":
		return kindProjectNice, nil
	case "bare":
		return kindBare, nil
	case "peer":
		return kindPeer, nil
	case "project-nats":
		return kindProjectNATS, nil
	}
	return nil, fmt.Errorf("unknown system %q (want project, project-nice, project-nats, bare or peer)", name)
}

// Env is where the benchmark finds its programs and puts its files.
type Env struct {
	// Repo is the repository root (bench/e2e/*.mjs and node_modules).
	Repo string
	// Node is the node executable (default "node").
	Node string
	// Agentadaptor is the built cmd/agentadaptor binary.
	Agentadaptor string
	// BareCmd runs the bare relay process: it gets -remote URL and must
	// print {"url": ...} on stdout and exit when its stdin closes (see
	// [BareMain]). BareEnv is added to its environment.
	BareCmd []string
	BareEnv []string
	// WorkDir receives config files and logs.
	WorkDir string
	// Logf reports progress (default: discard).
	Logf func(format string, args ...any)
}

func (e *Env) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

// proc is a child process the benchmark started.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error
	name  string
	// also is stopped after the process (project-nats: its nats-server).
	also *proc
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the process: stdin closed (Node scripts and the bare relay
// exit on it), SIGTERM after 3s (serve shuts down gracefully on it), SIGKILL
// after 15s more.
func (p *proc) stop() {
	if p.also != nil {
		defer p.also.stop()
	}
	_ = p.stdin.Close()
	if strings.HasPrefix(p.name, "project") {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
		return
	case <-time.After(3 * time.Second):
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// start runs argv with its output in WorkDir/name.log and returns when
// ready(line) returns a URL for a line of the watched stream (stdout, or
// stderr when watchStderr), or after 60s.
func (e *Env) start(name string, argv, env []string, watchStderr bool, ready func(line string) string) (*proc, string, error) {
	logf, err := os.Create(filepath.Join(e.WorkDir, name+".log"))
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = e.Repo
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	pr, pw := io.Pipe()
	if watchStderr {
		cmd.Stderr, cmd.Stdout = pw, logf
	} else {
		cmd.Stdout, cmd.Stderr = pw, logf
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, stdin: stdin, done: make(chan struct{}), name: name}
	go func() {
		p.err = cmd.Wait()
		_ = pw.Close()
		_ = logf.Close()
		close(p.done)
	}()
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			if !found {
				if u := ready(line); u != "" {
					found = true
					urlc <- u
				}
			}
			fmt.Fprintln(logf, line)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case u := <-urlc:
		return p, u, nil
	case <-p.done:
		return nil, "", fmt.Errorf("%s exited before it was ready: %v (log: %s)", name, p.err, filepath.Join(e.WorkDir, name+".log"))
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, "", fmt.Errorf("%s not ready after 60s (log: %s)", name, filepath.Join(e.WorkDir, name+".log"))
	}
}

func jsonURL(line string) string {
	var v struct {
		URL string `json:"url"`
	}
	if json.Unmarshal([]byte(line), &v) == nil {
		return v.URL
	}
	return ""
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// startRemote starts bench/e2e/remote.mjs.
func (e *Env) startRemote() (*proc, string, error) {
	return e.start("remote", []string{e.node(), filepath.Join("bench", "e2e", "remote.mjs")}, nil, false, jsonURL)
}

func (e *Env) node() string {
	if e.Node != "" {
		return e.Node
	}
	return "node"
}

// running is a started system.
type running struct {
	kind *systemKind
	url  string
	proc *proc
	// followerURL is project-nats's second replica: the load client
	// follows every run there too (RunStats.Follower*).
	followerURL string
}

// sysSpec is how to start a system.
type sysSpec struct {
	// stream is what a project run's delegation streams when width is 0.
	stream Stream
	// width 0: the project's scripted parent makes one delegation with
	// stream's objective, fixed for the life of the serve (the one-
	// delegation levels). width >= 1: its parent makes width delegations at
	// once (a `parallel:` step when width > 1), each with the run's prompt
	// as objective, tagged with the stream's index (the fan-out shapes).
	width int
	// nice is project-nice's parent.nice.
	nice int
	// env goes to the system's environment.
	env []string
}

// parentScenario is the project's scripted parent for spec.
func parentScenario(spec sysSpec) []byte {
	call := func(objective string) string {
		return fmt.Sprintf("{tool: delegate_to_agent, args: {agent: bench, objective: %q}}", objective)
	}
	switch {
	case spec.width <= 0:
		return fmt.Appendf(nil, "# the benchmark's parent: one delegation per run\nsteps:\n  - call: %s\n", call(spec.stream.Objective()))
	case spec.width == 1:
		return fmt.Appendf(nil, "# the benchmark's parent: one delegation per run, the run's prompt its objective\nsteps:\n  - call: %s\n", call("{{.Prompt}} stream=0"))
	}
	b := fmt.Appendf(nil, "# the benchmark's parent: %d delegations at once per run\nsteps:\n  - parallel:\n", spec.width)
	for j := range spec.width {
		b = fmt.Appendf(b, "      - call: %s\n", call(fmt.Sprintf("{{.Prompt}} stream=%d", j)))
	}
	return b
}

// startSystem starts a fresh instance of kind relaying remote, its
// project parent as spec says.
func (e *Env) startSystem(kind *systemKind, remote string, spec sysSpec) (*running, error) {
	var (
		p    *proc
		u    string
		fURL string
		err  error
	)
	extraEnv := spec.env
	switch kind {
	case kindProject, kindProjectNATS, kindProjectNice:
		var nats, follower *proc
		cluster, followerURL, natsURL, creds := "", "", "", ""
		if kind == kindProjectNATS {
			if nats, natsURL, creds, err = e.startNATS(); err != nil {
				return nil, err
			}
			cluster = clusterBlock(natsURL, creds, "bench")
		}
		scenario := filepath.Join(e.WorkDir, "parent.yaml")
		if err := os.WriteFile(scenario, parentScenario(spec), 0o644); err != nil {
			return nil, err
		}
		niceField := ""
		if kind == kindProjectNice {
			niceField = fmt.Sprintf(", nice: %d", spec.nice)
		}
		cfg := filepath.Join(e.WorkDir, "host.yaml")
		host := fmt.Sprintf(`# the benchmark's host: bench/e2e/README.md
parent: {adapter: scripted, scenario: %q, timeout: 30m%s}
max_active_runs: 100000
agents:
  - key: bench
    display_name: Bench Remote
    protocol: a2a
    agent_card_url: %s/.well-known/agent-card.json
    policy: {max_timeout: 30m, max_concurrent_global: 100000, max_concurrent_per_run: 100000, max_artifact_bytes: 67108864}
`, scenario, niceField, remote) + cluster
		if err := os.WriteFile(cfg, []byte(host), 0o644); err != nil {
			return nil, err
		}
		serveURL := func(line string) string {
			if m := listening.FindStringSubmatch(line); m != nil {
				return m[1]
			}
			return ""
		}
		if kind == kindProjectNATS {
			// The follower: a second replica of the same host, on which
			// the load client follows every run (the owner's config but
			// its replica name).
			fcfg := filepath.Join(e.WorkDir, "host-follower.yaml")
			if err := os.WriteFile(fcfg, []byte(strings.Replace(host, cluster, clusterBlock(natsURL, creds, "bench-follower"), 1)), 0o644); err != nil {
				nats.stop()
				return nil, err
			}
			if follower, followerURL, err = e.start(kind.name+"-follower", []string{e.Agentadaptor, "serve", "--config", fcfg, "--addr", "127.0.0.1:0"}, extraEnv, true, serveURL); err != nil {
				nats.stop()
				return nil, err
			}
			follower.also = nats
			nats = follower
		}
		p, u, err = e.start(kind.name, []string{e.Agentadaptor, "serve", "--config", cfg, "--addr", "127.0.0.1:0"}, extraEnv, true, serveURL)
		if err != nil && nats != nil {
			nats.stop()
		} else if p != nil {
			p.also = nats
		}
		if err == nil && followerURL != "" {
			if err = waitHealthy(followerURL); err != nil {
				p.stop()
				return nil, err
			}
			fURL = followerURL
		}
	case kindBare:
		argv := append(append([]string{}, e.BareCmd...), "-remote", remote)
		p, u, err = e.start("bare", argv, append(append([]string{}, e.BareEnv...), extraEnv...), false, jsonURL)
	case kindPeer:
		p, u, err = e.start("peer", []string{e.node(), filepath.Join("bench", "e2e", "peer.mjs"), "--remote", remote}, extraEnv, false, jsonURL)
	}
	if err != nil {
		return nil, err
	}
	if err := waitHealthy(u); err != nil {
		p.stop()
		return nil, fmt.Errorf("%s: %w", kind.name, err)
	}
	return &running{kind: kind, url: u, proc: p, followerURL: fURL}, nil
}

func waitHealthy(u string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(u + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/healthz not OK after 30s: %v", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BareMain is the bare relay process: `-remote URL [-addr ADDR]`; prints
// {"url": ...} when listening and exits when stdin closes.
func BareMain(args []string) int {
	var remote, addr string = "", "127.0.0.1:0"
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "-remote", "--remote":
			remote = args[i+1]
		case "-addr", "--addr":
			addr = args[i+1]
		}
	}
	if remote == "" {
		fmt.Fprintln(os.Stderr, "bare: -remote URL is required")
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	err := ServeBare(ctx, addr, strings.TrimRight(remote, "/"), func(u string) {
		b, _ := json.Marshal(map[string]any{"url": u, "pid": os.Getpid()})
		fmt.Println(string(b))
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "bare:", err)
		return 1
	}
	return 0
}
