package shellagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// Name is the default registry name of an [Adapter].
const Name = "shell"

// OptionScript is the adapter option (agentadaptor.WithAdapterOption) that
// gives one run its script.
const OptionScript = "script"

// EchoMessageID is the message id of the text deltas an [Adapter] with
// PlainText makes of plain stdout lines.
const EchoMessageID = "echo"

// Adapter is an agentadaptor.Adapter whose child process is a /bin/sh
// script printing StreamPayload JSON, one payload per line. Each run
// executes `/bin/sh -c SCRIPT sh PROMPT` (so $1 is the prompt); its script
// is the run's [OptionScript] option, else Scripts[prompt], else Script.
//
// The run's Output is the Text of its text.end payloads (and, with
// PlainText, its plain lines), concatenated. An Adapter is safe for
// concurrent runs; it must not be copied after first use.
type Adapter struct {
	// AdapterName is the registry name (default [Name]).
	AdapterName string
	// Script is the script of a run that has no OptionScript option and
	// whose prompt is not in Scripts.
	Script string
	// Scripts maps a prompt to the script it runs.
	Scripts map[string]string
	// SessionID, if set, is the session id every run reports.
	SessionID string
	// PlainText makes stdout lines that do not start with '{' text deltas of
	// message [EchoMessageID]. Without it such lines are parse errors, which
	// the SDK reports as malformed_line diagnostics.
	PlainText bool
	// Edit, if set, may change each run's invocation before it starts: add
	// environment, or set a Path that does not exist to make the start fail.
	Edit func(req *agentadaptor.AdapterRequest, inv *agentadaptor.Invocation)

	mu   sync.Mutex
	reqs []agentadaptor.AdapterRequest
}

// Name implements agentadaptor.Adapter.
func (a *Adapter) Name() string {
	if a.AdapterName == "" {
		return Name
	}
	return a.AdapterName
}

// Prepare implements agentadaptor.Adapter. It records the request (see
// [Adapter.Requests]).
func (a *Adapter) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, *req)
	a.mu.Unlock()
	script, ok := req.Options[OptionScript]
	if !ok {
		if script, ok = a.Scripts[req.Prompt]; !ok {
			script = a.Script
		}
	}
	inv := &agentadaptor.Invocation{
		Path:   "/bin/sh",
		Args:   []string{"-c", script, "sh", req.Prompt},
		Parser: &parser{sessionID: a.SessionID, plain: a.PlainText},
	}
	if a.Edit != nil {
		a.Edit(req, inv)
	}
	return inv, nil
}

// Requests returns a copy of the requests the adapter prepared, oldest
// first.
func (a *Adapter) Requests() []agentadaptor.AdapterRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]agentadaptor.AdapterRequest(nil), a.reqs...)
}

// parser turns JSON lines into payloads; see Adapter.
type parser struct {
	sessionID string
	plain     bool
	out       strings.Builder
}

func (p *parser) ParseLine(line []byte, emit agentadaptor.Emitter) error {
	if p.plain && (len(line) == 0 || line[0] != '{') {
		p.out.Write(line)
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: EchoMessageID, Delta: string(line)})
		return nil
	}
	var sp agentadaptor.StreamPayload
	if err := json.Unmarshal(line, &sp); err != nil {
		return fmt.Errorf("not a StreamPayload: %w", err)
	}
	if sp.Kind == agentadaptor.KindTextEnd {
		p.out.WriteString(sp.Text)
	}
	emit(sp)
	return nil
}

func (p *parser) Finish(agentadaptor.ExitStatus, agentadaptor.Emitter) agentadaptor.Outcome {
	return agentadaptor.Outcome{Output: p.out.String(), SessionID: p.sessionID}
}

// Quote returns s quoted for /bin/sh.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Print returns a command printing each payload as one JSON line. Unlike
// echo, it prints backslashes in the JSON as they are.
func Print(ps ...agentadaptor.StreamPayload) string {
	args := make([]string, len(ps))
	for i, p := range ps {
		b, err := json.Marshal(p)
		if err != nil {
			panic(err) // a StreamPayload always marshals
		}
		args[i] = Quote(string(b))
	}
	return `printf '%s\n' ` + strings.Join(args, " ")
}

// Text returns a command printing one whole assistant message: text.start,
// one text.delta with text and text.end whose Text is text.
func Text(messageID, text string) string {
	return Print(
		agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: messageID},
		agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: messageID, Delta: text},
		agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: messageID, Text: text},
	)
}

// Script joins commands into one script, one command per line.
func Script(cmds ...string) string { return strings.Join(cmds, "\n") }

// Gate is a point where a script waits for its test: the command
// [Gate.Wait] returns blocks until [Gate.Release] is called for the same
// gate, whether before or after the script gets there; each Release lets
// one Wait through. The Gate is the path of a FIFO (give each its own path
// under t.TempDir()); a blocked script costs no CPU, so a hundred of them
// are free.
type Gate string

// Wait returns the command that blocks until the gate is released.
func (g Gate) Wait() string {
	q := Quote(string(g))
	return fmt.Sprintf("[ -p %s ] || mkfifo %s 2>/dev/null; read _ < %s", q, q, q)
}

// Release lets one waiting script through, now or when it gets to the gate.
// The gate's write end stays open until t's cleanup, so the release is not
// lost when no script has reached the gate yet.
func (g Gate) Release(t testing.TB) {
	t.Helper()
	if err := syscall.Mkfifo(string(g), 0o600); err != nil && !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("gate %s: %v", g, err)
	}
	// Opening a FIFO read-write never blocks on Linux.
	f, err := os.OpenFile(string(g), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("gate %s: %v", g, err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if _, err := f.WriteString("go\n"); err != nil {
		t.Fatalf("gate %s: %v", g, err)
	}
}
