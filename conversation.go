package agentadaptor

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// Conversation drives a child that the run must talk to while it runs: an
// agent that speaks a protocol over its stdin and stdout (JSON-RPC, such as
// the Agent Client Protocol) rather than writing one event stream and
// exiting. An adapter returns one in [Invocation.Conversation] instead of a
// [Parser] (docs/design.md#conversations).
//
// The SDK keeps every guarantee of a line-parsed run: the child starts in
// its own process group with no secret on its command line; RawStreams hold
// only what the child wrote (never what the run wrote to it); each stdout
// line is capped by the run's line limit (a longer one is skipped with a
// line_too_long diagnostic and never reaches the conversation); payloads go
// through the run's ordered queue; the run ends with exactly one terminal
// payload; and nothing of the process group survives the run.
type Conversation interface {
	// Converse talks to the child until the run's work is done, emitting
	// the run's payloads with emit (safe for concurrent use: payloads are
	// delivered in the order of the calls). It reads the child's stdout
	// from io.Stdout (whole lines, each ending in '\n') and writes to the
	// child's stdin through io.Stdin.
	//
	// When Converse returns, the SDK closes the child's stdin, gives the
	// child the run's cancel grace to exit by itself, then sends SIGINT to
	// its process group and SIGKILL a grace later. ctx ends when the child
	// has exited and its output is drained: Converse must return then (its
	// reads see EOF and its writes fail before that). A non-nil error fails
	// the run with FailureProtocol unless Finish reports a failure of its own
	// or the child exited non-zero first.
	Converse(ctx context.Context, io ConversationIO, emit Emitter) error
	// Interrupt asks the child to stop the work under way (the run was
	// cancelled or timed out), the polite way its protocol offers. It must
	// not block: Converse, which owns the conversation, sends the request.
	// The SDK calls it at most once. If Converse has not returned within
	// the run's cancel grace, the process group gets SIGINT, and SIGKILL a
	// grace later; once Converse has returned, SIGINT is sent at once.
	Interrupt()
	// Finish is called once, after the child exited and Converse returned.
	// It reports the run's output, session id, usage and, when the
	// conversation ended in a failure, the typed failure.
	Finish(exit ExitStatus, emit Emitter) Outcome
}

// ConversationIO is the child's stdio as a [Conversation] sees it.
type ConversationIO struct {
	// Stdout reads the child's stdout: every non-blank line within the
	// run's line limit, each ending in '\n'. It reports EOF when the child's
	// stdout has ended.
	Stdout io.Reader
	// Stdin writes to the child's stdin. A write fails once the child is
	// gone or the conversation is over; it never outlives the run.
	Stdin io.Writer
}

// conversation is the SDK's side of a run driven by a Conversation: the
// child's stdin, the line pipe that feeds Converse, and the timers that end
// the child when the conversation is over or was interrupted.
type conversation struct {
	conv  Conversation
	sig   *groupSignaller
	grace time.Duration

	stdin   *os.File       // the write end of the child's stdin
	linesR  *io.PipeReader // Converse reads lines from here
	linesW  *io.PipeWriter // readStdout writes accepted lines here
	ctx     context.Context
	stop    context.CancelFunc
	done    chan struct{} // closed when Converse has returned
	err     error         // Converse's error, set before done is closed
	closeIn sync.Once

	mu          sync.Mutex
	exited      bool        // the child has exited: no more signals
	interrupted bool        // the run was cancelled
	finished    bool        // Converse has returned
	doneFirst   bool        // Converse returned before the child exited
	timer       *time.Timer // the pending SIGINT, if any
}

func newConversation(c Conversation, sig *groupSignaller, grace time.Duration, stdin *os.File) *conversation {
	pr, pw := io.Pipe()
	ctx, stop := context.WithCancel(context.Background())
	return &conversation{conv: c, sig: sig, grace: grace, stdin: stdin, linesR: pr, linesW: pw, ctx: ctx, stop: stop, done: make(chan struct{})}
}

// start runs Converse in a goroutine the conversation owns (wait waits
// for it).
func (c *conversation) start(emit Emitter) {
	go func() {
		err := c.conv.Converse(c.ctx, ConversationIO{Stdout: c.linesR, Stdin: stdinWriter{c.stdin}}, emit)
		// Lines the child still writes are not read any more: readStdout
		// keeps draining (and capturing) them without blocking.
		c.linesR.CloseWithError(errConversationOver)
		c.closeStdin()
		c.mu.Lock()
		c.finished = true
		c.doneFirst = !c.exited
		switch {
		case c.exited:
		case c.interrupted:
			c.stopTimerLocked()
			c.sig.interrupt(c.grace) // cancelled: no reason to wait
		default:
			c.armLocked() // the child may exit by itself within the grace
		}
		c.mu.Unlock()
		c.err = err
		close(c.done)
	}()
}

var errConversationOver = errors.New("agentadaptor: the conversation is over")

// interrupt is the run's cancellation: the Conversation is asked to stop
// the work, and the group is signalled when it does not within the grace.
func (c *conversation) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exited || c.interrupted {
		return
	}
	c.interrupted = true
	if c.finished {
		c.stopTimerLocked()
		c.sig.interrupt(c.grace)
		return
	}
	c.conv.Interrupt()
	c.armLocked()
}

// armLocked sends SIGINT (then SIGKILL) to the group after the grace.
func (c *conversation) armLocked() {
	if c.timer != nil {
		return
	}
	c.timer = time.AfterFunc(c.grace, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.exited {
			c.sig.interrupt(c.grace)
		}
	})
}

func (c *conversation) stopTimerLocked() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

// childExited is called once the child has exited (before it is reaped):
// no timer of the conversation signals the group after it.
func (c *conversation) childExited() {
	c.mu.Lock()
	c.exited = true
	c.stopTimerLocked()
	c.mu.Unlock()
}

// line hands one accepted stdout line to Converse. After Converse returned
// the line is dropped (readStdout keeps draining the pipe).
func (c *conversation) line(l []byte) {
	buf := make([]byte, len(l)+1)
	copy(buf, l)
	buf[len(l)] = '\n'
	_, _ = c.linesW.Write(buf)
}

// wait ends the conversation's input (the child's stdout is drained), ends
// its context and waits for Converse to return.
func (c *conversation) wait() error {
	c.linesW.Close()
	c.stop()
	<-c.done
	c.closeStdin()
	return c.err
}

func (c *conversation) closeStdin() { c.closeIn.Do(func() { c.stdin.Close() }) }

// completedFirst reports whether Converse returned while the child was
// still running, i.e. the work was done before the SDK ended the child.
func (c *conversation) completedFirst() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doneFirst
}

// stdinWriter is the child's stdin as ConversationIO.Stdin: an *os.File
// whose Close (when the conversation ends) unblocks a Write waiting on a
// child that stopped reading.
type stdinWriter struct{ f *os.File }

func (w stdinWriter) Write(p []byte) (int, error) { return w.f.Write(p) }
