package ssetest

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Frame is one SSE frame: its id (0 when it has none) and its data line.
type Frame struct {
	ID   uint64
	Data string
}

// Reader reads frames from a live SSE response.
type Reader struct {
	// Resp is the response being read; close its Body to leave the stream.
	Resp *http.Response
	// Raw holds every byte read so far.
	Raw bytes.Buffer
	br  *bufio.Reader
}

// Open sends req and returns a reader of its SSE response; it fails the
// test unless the answer is 200. The body is closed when the test ends.
func Open(t testing.TB, req *http.Request) *Reader {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, b)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &Reader{Resp: resp, br: bufio.NewReader(resp.Body)}
}

// Next returns the next frame with data; ok is false at the end of the
// stream. Comments and frames without data are skipped.
func (s *Reader) Next() (f Frame, ok bool) {
	for {
		line, err := s.br.ReadString('\n')
		s.Raw.WriteString(line)
		if err != nil {
			return f, false
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if f.Data != "" {
				return f, true
			}
		case strings.HasPrefix(line, "id: "):
			f.ID, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "data: "):
			f.Data = line[6:]
		}
	}
}

// Until reads frames until one whose data contains want, and returns them
// all (that one last); it fails the test if the stream ends first.
func (s *Reader) Until(t testing.TB, want string) []Frame {
	t.Helper()
	var out []Frame
	for {
		f, ok := s.Next()
		if !ok {
			t.Fatalf("the stream ended before %q:\n%s", want, s.Raw.String())
		}
		out = append(out, f)
		if strings.Contains(f.Data, want) {
			return out
		}
	}
}

// Rest reads the stream to its end and returns its remaining frames.
func (s *Reader) Rest() []Frame {
	var out []Frame
	for {
		f, ok := s.Next()
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

// LastID returns the id of the last frame with one (0: none has).
func LastID(fs []Frame) uint64 {
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].ID != 0 {
			return fs[i].ID
		}
	}
	return 0
}
