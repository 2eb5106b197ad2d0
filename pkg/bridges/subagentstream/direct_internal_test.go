package subagentstream

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httputil"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

// A subscriber written on its own connection (direct.go) has its frames
// written by the goroutine that appends them, without waking the
// response's goroutine; when the client stops reading, that goroutine
// never blocks: it leaves what the socket did not take to the owner, which
// writes it, in order, once the client reads again. These tests drive a
// directConn over a real loopback TCP connection, its owner loop not
// running unless they run it.

// directPair returns a stream with one subscriber written directly on the
// server side of a loopback TCP connection, and the client side. With
// tiny, both sides' socket buffers are a few KiB, so that a client that
// does not read stops the writes soon.
func directPair(t *testing.T, tiny bool) (*Stream, *Subscriber, *directConn, net.Conn) {
	t.Helper()
	return directPairOpts(t, tiny, Options{SubscriberMaxQueued: 1 << 20, SubscriberMaxQueuedBytes: 1 << 30})
}

// directPairOpts is directPair with the stream's options.
func directPairOpts(t *testing.T, tiny bool, opts Options) (*Stream, *Subscriber, *directConn, net.Conn) {
	t.Helper()
	s := makeStream("th-1", "run-1", opts)
	sub, err := s.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	dc, client := attachDirect(t, sub, tiny)
	return s, sub, dc, client
}

// attachDirect makes sub a direct subscriber written on the server side of
// a loopback TCP connection and returns it and the client side (tiny: as
// in directPair).
func attachDirect(t *testing.T, sub *Subscriber, tiny bool) (*directConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		if !tiny {
			return nil
		}
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
	}}
	client, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	if tiny {
		_ = server.(*net.TCPConn).SetWriteBuffer(4 << 10)
	}
	raw, err := server.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	dc := &directConn{conn: server, raw: raw, sub: sub}
	sub.setDirect(dc)
	return dc, client
}

// appendText appends a custom frame numbered i (about 250 bytes).
func appendText(t *testing.T, s *Stream, i int) {
	t.Helper()
	appendPadded(t, s, i, 200)
}

// appendPadded appends a custom frame numbered i with pad bytes of text.
func appendPadded(t *testing.T, s *Stream, i, pad int) {
	t.Helper()
	f := s.frame(agui.NewCustomEvent("test.n", map[string]any{"n": i, "pad": strings.Repeat("x", pad)}, time.Now()))
	if f == nil {
		t.Fatal("no frame")
	}
	s.append(f)
}

func woken(sub *Subscriber) bool {
	select {
	case <-sub.wake:
		return true
	default:
		return false
	}
}

// readIDs reads n SSE frames from the chunked body on client and returns
// their ids.
func readIDs(t *testing.T, body *bufio.Reader, n int) []uint64 {
	t.Helper()
	var ids []uint64
	for len(ids) < n {
		line, err := body.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d frames: %v", len(ids), err)
		}
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	return ids
}

func TestDirectFrameWrittenByTheAppender(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, sub, _, client := directPair(t, false)
	body := bufio.NewReader(httputil.NewChunkedReader(client))
	for i := range 3 {
		appendText(t, s, i)
		if woken(sub) {
			t.Fatal("the response's goroutine was woken for a frame its appender wrote")
		}
		_ = client.SetReadDeadline(time.Now().Add(time.Minute))
		if ids := readIDs(t, body, 1); ids[0] != uint64(i+1) {
			t.Fatalf("frame %d arrived with id %d", i+1, ids[0])
		}
	}
}

func TestDirectAppenderNeverBlocksOnAClientThatDoesNotRead(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, sub, dc, client := directPair(t, true)
	const n = 5000 // about 1.2 MB of frames, far beyond both sockets' buffers
	appended := make(chan struct{})
	go func() {
		defer close(appended)
		for i := range n {
			appendText(t, s, i)
		}
	}()
	select {
	case <-appended:
	case <-time.After(2 * time.Minute):
		t.Fatal("appending to a subscriber whose client does not read blocked")
	}
	dc.mu.Lock()
	left := len(dc.out)
	dc.mu.Unlock()
	if left == 0 || sub.Pending() == 0 {
		t.Fatalf("the socket took everything (%d bytes left to the owner, %d frames queued): the client was meant to stall it", left, sub.Pending())
	}
	if !woken(sub) {
		t.Fatal("the owner was not woken to write what the appender left")
	}
	// The owner writes the rest, blocking, while the client reads: every
	// frame arrives once, in order.
	owned := make(chan bool)
	go func() {
		dc.mu.Lock()
		defer dc.mu.Unlock()
		owned <- dc.flush(true)
	}()
	_ = client.SetReadDeadline(time.Now().Add(2 * time.Minute))
	ids := readIDs(t, bufio.NewReader(httputil.NewChunkedReader(client)), n)
	if stop := <-owned; stop {
		t.Fatal("the owner ended the response of a live stream")
	}
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("frame %d arrived with id %d", i+1, id)
		}
	}
}

// The chunk framing of a batch: its size line in the room kept before it.
func TestSealChunk(t *testing.T) {
	for _, n := range []int{1, 15, 16, 4095, 1 << 20} {
		b := append(make([]byte, chunkHead), strings.Repeat("a", n)...)
		got := string(sealChunk(b))
		want := fmt.Sprintf("%x\r\n%s\r\n", n, strings.Repeat("a", n))
		if got != want {
			t.Fatalf("chunk of %d bytes framed as %.20q", n, got)
		}
	}
}

// A frame appended while another goroutine writes to the client (here the
// test holds the write lock, as the owner does while it writes) stays
// queued, and the owner is woken to write it: it never waits for a wake-up
// that no one sends.
func TestDirectFrameQueuedWhileTheOwnerWritesWakesIt(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, sub, dc, _ := directPair(t, false)
	dc.mu.Lock()
	appendText(t, s, 0)
	dc.mu.Unlock()
	if sub.Pending() != 1 {
		t.Fatalf("%d frames queued, want the one appended while the owner wrote", sub.Pending())
	}
	if !woken(sub) {
		t.Fatal("a frame left queued did not wake the owner")
	}
}

// appendDelta appends a text delta of delegation del-1's message m1, the
// kind of frame a slow subscriber's queue coalesces.
func appendDelta(t *testing.T, s *Stream, text string) {
	t.Helper()
	build := func(text string) events.Event {
		return agui.NewCustomEvent("test.delta", map[string]any{"text": text}, time.Now())
	}
	f := s.frame(build(text))
	if f == nil {
		t.Fatal("no frame")
	}
	f.delta = &deltaInfo{delegationID: "del-1", messageID: "m1", text: text, rebuild: build}
	s.append(f)
}

// A delta merged into a frame still queued (the owner was woken for it but
// has not yet taken it) is written by the goroutine that appended it, like
// any frame: it is not left queued with no wake-up pending.
func TestDirectCoalescedDeltaWrittenByItsAppender(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, sub, dc, client := directPairOpts(t, false, Options{SubscriberBuffer: 1, SubscriberMaxQueued: 1 << 20, SubscriberMaxQueuedBytes: 1 << 30})
	dc.mu.Lock()
	appendDelta(t, s, "hel")
	dc.mu.Unlock()
	if !woken(sub) { // the owner takes its wake-up, and has not yet written
		t.Fatal("a frame left queued did not wake the owner")
	}
	appendDelta(t, s, "lo")
	if n := sub.Pending(); n != 0 {
		t.Fatalf("%d frames queued after the coalesced delta's append, with no owner woken to write them", n)
	}
	_ = client.SetReadDeadline(time.Now().Add(time.Minute))
	body := bufio.NewReader(httputil.NewChunkedReader(client))
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			if !strings.Contains(line, `"text":"hello"`) {
				t.Fatalf("the coalesced frame is %s, want the two deltas merged", line)
			}
			return
		}
	}
}

// A cut response ends without the body's last chunk, whatever the timing
// of the write deadline that cuts it: the client's HTTP stack reports the
// body truncated, as for a response written through its ResponseWriter,
// never a complete one.
func TestDirectCutResponseHasNoBodyEnd(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, sub, dc, client := directPairOpts(t, false, Options{SubscriberMaxQueued: 4, SubscriberMaxQueuedBytes: 1 << 30})
	dc.mu.Lock() // the owner writes: frames queue until the bound cuts the subscriber
	for i := 0; !sub.Cut(); i++ {
		if i > 100 {
			t.Fatal("the subscriber was not cut past its bound")
		}
		appendText(t, s, i)
	}
	if stop := dc.flush(true); !stop {
		t.Fatal("the owner did not end the cut response")
	}
	dc.mu.Unlock()
	_ = dc.conn.Close()
	_ = client.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "0\r\n\r\n") {
		t.Fatalf("the cut response was written a complete body end: %q", got)
	}
}

// ownedPair runs the owner of a directPair's response (serveDirect) with a
// hub whose keep-alives do not come during a test; done is closed when it
// returns. The owner is stopped (its request's context cancelled, its
// connection closed) and waited for at the test's end.
func ownedPair(t *testing.T, tiny bool, opts Options) (*Hub, *Stream, *Subscriber, *directConn, net.Conn, <-chan struct{}) {
	t.Helper()
	s, sub, dc, client := directPairOpts(t, tiny, opts)
	h := NewHub(delegation.NewMemoryBus(), HubOptions{KeepAlive: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.serveDirect(ctx, dc)
	}()
	t.Cleanup(func() {
		cancel()
		_ = dc.conn.Close()
		<-done
		h.Close()
	})
	return h, s, sub, dc, client, done
}

// ownerBlocked queues far more frames than the sockets of a client that
// does not read can hold, then waits until the owner takes the write lock
// to write them: it then holds it, blocked, until its write fails (only
// the owner and the test append or write here).
func ownerBlocked(t *testing.T, s *Stream, dc *directConn) {
	t.Helper()
	dc.mu.Lock() // the appends queue their frames and wake the owner
	for i := range 40 {
		appendPadded(t, s, i, 8<<10) // 320 KiB in all
	}
	dc.mu.Unlock()
	for deadline := time.Now().Add(time.Minute); dc.mu.TryLock(); time.Sleep(time.Millisecond) {
		dc.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the owner was not woken to write the queued frames")
		}
	}
}

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal(what)
	}
}

// A client that falls behind its bound while the owner's write to it is
// blocked (it stopped reading) is let go at once: the cut unblocks the
// write, and the owner ends the response although the client still reads
// nothing.
func TestDirectCutUnblocksTheOwnersWrite(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, s, sub, dc, _, done := ownedPair(t, true, Options{SubscriberMaxQueued: 64, SubscriberMaxQueuedBytes: 1 << 30})
	ownerBlocked(t, s, dc)
	for i := 0; !sub.Cut(); i++ {
		if i > 1000 {
			t.Fatal("the subscriber was not cut past its bound")
		}
		appendText(t, s, i)
	}
	waitDone(t, done, "the owner of a cut response is still blocked writing to a client that does not read")
}

// Hub.Close ends a hijacked response whose owner is blocked on a client
// that does not read (http.Server.Shutdown does not know the connection).
func TestDirectCloseUnblocksTheOwnersWrite(t *testing.T) {
	defer goleak.VerifyNone(t)
	h, s, _, dc, _, done := ownedPair(t, true, Options{SubscriberMaxQueued: 1 << 20, SubscriberMaxQueuedBytes: 1 << 30})
	ownerBlocked(t, s, dc)
	h.Close()
	waitDone(t, done, "Hub.Close left a hijacked response blocked on a client that does not read")
}

// A client that closes its connection ends its response at once, not at
// the next frame or keep-alive written to it.
func TestDirectClientThatLeavesEndsTheResponse(t *testing.T) {
	defer goleak.VerifyNone(t)
	_, _, _, _, client, done := ownedPair(t, false, Options{})
	_ = client.Close()
	waitDone(t, done, "the owner did not notice that its client left")
}

// The frames the merge appends while it holds the stream (one parent
// payload, one batch of bus events) stay queued until it lets go, and then
// reach a direct client in one write: one HTTP chunk carrying them all, in
// order.
func TestDirectFramesOfOneMergeGoOutInOneWrite(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, sub, _, client := directPair(t, false)
	m := newMerger(s)
	m.mu.Lock()
	for i := range 3 {
		f := s.frame(agui.NewCustomEvent("test.n", map[string]any{"n": i}, time.Now()))
		if f == nil {
			t.Fatal("no frame")
		}
		m.append(f)
	}
	if sub.Pending() != 3 {
		t.Fatalf("%d frames queued while the merge holds the stream, want 3", sub.Pending())
	}
	m.unlock()
	if sub.Pending() != 0 {
		t.Fatalf("%d frames still queued once the merge let go", sub.Pending())
	}
	_ = client.SetReadDeadline(time.Now().Add(time.Minute))
	raw := bufio.NewReader(client)
	size, err := raw.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(size), 16, 32)
	if err != nil {
		t.Fatalf("chunk size line %q: %v", size, err)
	}
	chunk := make([]byte, n)
	if _, err := io.ReadFull(raw, chunk); err != nil {
		t.Fatal(err)
	}
	ids := readIDs(t, bufio.NewReader(bytes.NewReader(chunk)), 3)
	if !slices.Equal(ids, []uint64{1, 2, 3}) {
		t.Fatalf("the first chunk carries frames %v, want 1, 2 and 3", ids)
	}
}

// What an inline publisher left queued while another goroutine held the
// merge is merged by that goroutine when it lets go, and written to a
// direct client then: push did not wake the response's owner, so nothing
// else would write it.
func TestDirectBusEventsMergedOnLettingGoAreWritten(t *testing.T) {
	defer goleak.VerifyNone(t)
	m, bus := inlineMerger(t)
	sub, err := m.out.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	_, client := attachDirect(t, sub, false)
	m.mu.Lock()
	bus.Publish(delegationEvent(delegation.DelegationStarted, "")) // the holder's to merge
	if m.frames() != 0 {
		t.Fatal("the publisher merged while another goroutine held the merge")
	}
	m.unlock()
	if m.frames() == 0 {
		t.Fatal("letting go did not merge what the publisher left")
	}
	if sub.Pending() != 0 {
		t.Fatalf("%d frames merged on letting go are still queued for the direct client", sub.Pending())
	}
	_ = client.SetReadDeadline(time.Now().Add(time.Minute))
	if ids := readIDs(t, bufio.NewReader(httputil.NewChunkedReader(client)), 1); ids[0] != 1 {
		t.Fatalf("the client read frame %d first, want 1", ids[0])
	}
}

// A direct client that gets an early frame of a merge step and not a later
// one (a delta dropped at its byte bound) still has the early one written
// when the merge lets go.
func TestDirectClientMissingALaterFrameOfTheStepGetsTheEarlierOne(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, sub, _, client := directPairOpts(t, false, Options{SubscriberBuffer: 1 << 20, SubscriberMaxBytes: 64,
		SubscriberMaxQueued: 1 << 20, SubscriberMaxQueuedBytes: 1 << 30})
	m := newMerger(s)
	m.mu.Lock()
	f := s.frame(agui.NewCustomEvent("test.n", map[string]any{"n": 1}, time.Now()))
	text := strings.Repeat("x", 200) // past the subscriber's 64 bytes of delta text: dropped for it
	build := func(text string) events.Event {
		return agui.NewCustomEvent("test.delta", map[string]any{"text": text}, time.Now())
	}
	d := s.frame(build(text))
	if f == nil || d == nil {
		t.Fatal("no frame")
	}
	d.delta = &deltaInfo{delegationID: "del-1", messageID: "m1", text: text, rebuild: build}
	m.append(f)
	m.append(d)
	m.unlock()
	if sub.Pending() != 0 {
		t.Fatalf("%d frames still queued for the direct client once the merge let go", sub.Pending())
	}
	_ = client.SetReadDeadline(time.Now().Add(time.Minute))
	if ids := readIDs(t, bufio.NewReader(httputil.NewChunkedReader(client)), 1); ids[0] != 1 {
		t.Fatalf("the client read frame %d first, want 1", ids[0])
	}
}
