package subagentstream

import (
	"bufio"
	"fmt"
	"net"
	"net/http/httputil"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
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
	s := makeStream("th-1", "run-1", Options{SubscriberMaxQueued: 1 << 20, SubscriberMaxQueuedBytes: 1 << 30})
	sub, err := s.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	dc := &directConn{conn: server, raw: raw, sub: sub}
	sub.setDirect(dc)
	return s, sub, dc, client
}

// appendText appends a custom frame numbered i.
func appendText(t *testing.T, s *Stream, i int) {
	t.Helper()
	f := s.frame(agui.NewCustomEvent("test.n", map[string]any{"n": i, "pad": strings.Repeat("x", 200)}, time.Now()))
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
