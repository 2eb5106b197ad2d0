package agui

import (
	"bufio"
	"bytes"
	"io"
)

// frame is one dispatched server-sent event.
type frame struct {
	// Event is the frame's "event:" field ("" when absent). AG-UI takes the
	// event type from the JSON "type" field, not from here.
	Event string
	// ID is the last event ID seen on the stream so far (the "id:" field
	// of this frame or of an earlier one), as the SSE spec defines it.
	ID string
	// Data is the frame's data lines joined with "\n". It is only valid
	// until the next call of the reader that returned it.
	Data []byte
}

// frameReader splits an SSE byte stream into frames following the
// WHATWG event-stream rules: lines end in CRLF, LF or a lone CR; a leading
// UTF-8 BOM is skipped; ":" lines are comments (keep-alives); a field's
// value loses one leading space; "data" lines accumulate; a blank line
// dispatches a frame with data; a frame cut off by the end of the stream is
// discarded. Every line is bounded by max, and so are the field lines of
// one frame together, so memory stays within a small multiple of max.
type frameReader struct {
	r      *bufio.Reader
	max    int
	line   []byte
	data   []byte
	lastID string
	skipLF bool // the previous line ended in CR: a following LF belongs to it
	bomOK  bool // the start of the stream has been checked for a BOM
}

func newFrameReader(r io.Reader, limit int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, max(16, min(32<<10, limit))), max: limit}
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// readLine returns the next line without its terminator, valid until the
// next call. At the end of the stream it returns the reader's error (io.EOF
// for a clean end); an unterminated last line is dropped.
func (p *frameReader) readLine() ([]byte, error) {
	p.line = p.line[:0]
	for {
		if p.r.Buffered() == 0 {
			if _, err := p.r.Peek(1); err != nil {
				return nil, err
			}
		}
		chunk, _ := p.r.Peek(p.r.Buffered())
		if p.skipLF {
			p.skipLF = false
			if chunk[0] == '\n' {
				_, _ = p.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(chunk, "\r\n")
		n := i
		if i < 0 {
			n = len(chunk)
		}
		if len(p.line)+n > p.max {
			return nil, ErrFrameTooLarge
		}
		p.line = append(p.line, chunk[:n]...)
		if i < 0 {
			_, _ = p.r.Discard(n)
			continue
		}
		p.skipLF = chunk[i] == '\r'
		_, _ = p.r.Discard(i + 1)
		if !p.bomOK {
			p.bomOK = true
			p.line = bytes.TrimPrefix(p.line, utf8BOM)
		}
		return p.line, nil
	}
}

// next returns the next frame that carries data. Errors: the underlying
// reader's (io.EOF at a clean end) or ErrFrameTooLarge.
func (p *frameReader) next() (frame, error) {
	p.data = p.data[:0]
	event := ""
	size := 0
	for {
		line, err := p.readLine()
		if err != nil {
			return frame{}, err
		}
		if len(line) == 0 {
			if len(p.data) == 0 {
				// A blank line without data (e.g. after "event:" or
				// "id:" lines only) dispatches nothing.
				event, size = "", 0
				continue
			}
			return frame{Event: event, ID: p.lastID, Data: p.data[:len(p.data)-1]}, nil
		}
		if line[0] == ':' {
			continue // comment: keep-alive
		}
		if size += len(line); size > p.max {
			return frame{}, ErrFrameTooLarge
		}
		field, value := line, []byte(nil)
		if before, after, ok := bytes.Cut(line, []byte{':'}); ok {
			field, value = before, after
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			p.data = append(p.data, value...)
			p.data = append(p.data, '\n')
		case "event":
			event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.lastID = string(value)
			}
		}
		// "retry" and unknown fields are ignored.
	}
}
