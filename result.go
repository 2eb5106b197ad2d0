package agentadaptor

import (
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"
)

// RunStatus is how a run ended.
type RunStatus string

// The run statuses.
const (
	StatusCompleted RunStatus = "completed"
	StatusFailed    RunStatus = "failed"
	StatusCancelled RunStatus = "cancelled"
)

// RunResult is the outcome of one run.
type RunResult struct {
	RunID      string    `json:"run_id"`
	Adapter    string    `json:"adapter"`
	Status     RunStatus `json:"status"`
	Output     string    `json:"output"`
	SessionKey string    `json:"session_key,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`
	Usage      *Usage    `json:"usage,omitempty"`
	// RawStreams holds what the local child process wrote, capped; it never
	// holds remote protocol traffic, and secrets of the run are redacted.
	RawStreams RawStreams `json:"raw_streams"`
	ExitCode   int        `json:"exit_code"`
	// Failure is set when Status is failed or cancelled.
	Failure *Failure `json:"failure,omitempty"`
	// RuntimeServices are the services ensured for the run, without secrets.
	RuntimeServices []RuntimeServiceRef `json:"runtime_services,omitempty"`
	// MCPServers is the effective MCP set the adapter materialized; secret
	// references are still in ${VAR} form.
	MCPServers []MCPServerSpec `json:"mcp_servers,omitempty"`
	Timings    Timings         `json:"timings"`
}

// Err returns the run's Failure as an error, or nil if it completed.
func (r *RunResult) Err() error {
	if r == nil || r.Failure == nil {
		return nil
	}
	return r.Failure
}

// RawStreams is the captured stdout and stderr of the child, each capped.
// In JSON each stream is text when it is valid UTF-8 ("stdout"), and
// base64 otherwise ("stdout_base64").
type RawStreams struct {
	Stdout          []byte `json:"stdout"`
	Stderr          []byte `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
}

// rawStreamsJSON is the JSON shape of RawStreams.
type rawStreamsJSON struct {
	Stdout          *string `json:"stdout,omitempty"`
	StdoutBase64    []byte  `json:"stdout_base64,omitempty"`
	Stderr          *string `json:"stderr,omitempty"`
	StderrBase64    []byte  `json:"stderr_base64,omitempty"`
	StdoutTruncated bool    `json:"stdout_truncated,omitempty"`
	StderrTruncated bool    `json:"stderr_truncated,omitempty"`
}

// MarshalJSON writes each stream as text when it is valid UTF-8, as base64
// (the _base64 field) otherwise.
func (r RawStreams) MarshalJSON() ([]byte, error) {
	out := rawStreamsJSON{StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated}
	text := func(b []byte, s **string, raw *[]byte) {
		if utf8.Valid(b) {
			t := string(b)
			*s = &t
		} else {
			*raw = b
		}
	}
	text(r.Stdout, &out.Stdout, &out.StdoutBase64)
	text(r.Stderr, &out.Stderr, &out.StderrBase64)
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *RawStreams) UnmarshalJSON(b []byte) error {
	var in rawStreamsJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*r = RawStreams{Stdout: in.StdoutBase64, Stderr: in.StderrBase64, StdoutTruncated: in.StdoutTruncated, StderrTruncated: in.StderrTruncated}
	if in.Stdout != nil {
		r.Stdout = []byte(*in.Stdout)
	}
	if in.Stderr != nil {
		r.Stderr = []byte(*in.Stderr)
	}
	return nil
}

// Timings records when the run passed its milestones.
type Timings struct {
	Created  time.Time     `json:"created"`  // Start was called
	Started  time.Time     `json:"started"`  // the process started
	Exited   time.Time     `json:"exited"`   // the process exited
	Ended    time.Time     `json:"ended"`    // cleanup done, result final
	Setup    time.Duration `json:"setup"`    // Created -> Started
	Process  time.Duration `json:"process"`  // Started -> Exited
	Teardown time.Duration `json:"teardown"` // Exited -> Ended
}

// capBuffer keeps the first limit bytes written to it and, with tailCap,
// also the last tailCap bytes of what went past the limit (where a failing
// process writes its reason).
type capBuffer struct {
	limit     int
	buf       []byte
	truncated bool
	tailCap   int
	tail      []byte // the last bytes past limit, at most 2*tailCap
}

func (c *capBuffer) Write(p []byte) {
	room := max(c.limit-len(c.buf), 0)
	if len(p) > room {
		c.truncated = true
		if c.tailCap > 0 {
			c.keepTail(p[room:])
		}
		p = p[:room]
	}
	c.buf = append(c.buf, p...)
}

func (c *capBuffer) keepTail(p []byte) {
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		return
	}
	if len(c.tail)+len(p) > 2*c.tailCap {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-(c.tailCap-len(p)):]...)
	}
	c.tail = append(c.tail, p...)
}

// withTail returns what was kept: the first limit bytes, then, when more
// was written, a marker and the last tailCap bytes.
func (c *capBuffer) withTail() []byte {
	if !c.truncated || len(c.tail) == 0 {
		return c.buf
	}
	tail := c.tail[max(0, len(c.tail)-c.tailCap):]
	out := append(slices.Clip(c.buf), "\n[…]\n"...)
	return append(out, tail...)
}
