package sse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
)

// Encoder writes SSE frames "id: N\ndata: JSON\n\n" with its own id
// counter, starting at 1 and increasing by one per frame. Each frame is one
// Write call. An Encoder is not safe for concurrent use.
type Encoder struct {
	w    io.Writer
	id   uint64
	buf  bytes.Buffer
	json *json.Encoder
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder {
	e := &Encoder{w: w}
	e.json = json.NewEncoder(&e.buf)
	e.json.SetEscapeHTML(false)
	return e
}

// LastID returns the id of the last frame written (0 before the first).
func (e *Encoder) LastID() uint64 { return e.id }

// WriteEvent validates ev with the AG-UI SDK's Validate and writes it as one
// frame. An invalid event is not written; the error names it.
func (e *Encoder) WriteEvent(ev events.Event) error {
	if err := ev.Validate(); err != nil {
		return fmt.Errorf("sse: refusing to write an invalid %s event: %w", ev.Type(), err)
	}
	return e.WriteValue(ev)
}

// WriteValue writes v, encoded as JSON, as one frame.
func (e *Encoder) WriteValue(v any) error {
	e.buf.Reset()
	e.buf.WriteString("id: ")
	e.buf.WriteString(strconv.FormatUint(e.id+1, 10))
	e.buf.WriteString("\ndata: ")
	if err := e.json.Encode(v); err != nil { // appends '\n'
		return fmt.Errorf("sse: encoding a frame: %w", err)
	}
	e.buf.WriteByte('\n')
	if _, err := e.w.Write(e.buf.Bytes()); err != nil {
		return err
	}
	e.id++
	return nil
}

// WriteComment writes an SSE comment ": text\n\n" (clients ignore it; it
// keeps idle connections and proxies alive). It does not consume an id.
func (e *Encoder) WriteComment(text string) error {
	text = strings.ReplaceAll(text, "\n", " ")
	_, err := io.WriteString(e.w, ": "+text+"\n\n")
	return err
}

// WriteFrame writes an already-encoded JSON payload as one frame with the
// given id, for streams that assign their own cursor (the subagent mux). An
// id of 0 writes a frame without an id line, which leaves the client's last
// event id unchanged. data must be a single line of JSON.
func (e *Encoder) WriteFrame(id uint64, data []byte) error {
	e.buf.Reset()
	e.buf.Write(AppendFrame(e.buf.AvailableBuffer(), id, data))
	if _, err := e.w.Write(e.buf.Bytes()); err != nil {
		return err
	}
	if id > e.id {
		e.id = id
	}
	return nil
}

// AppendFrame appends to b the SSE frame WriteFrame writes for id and data,
// and returns the extended slice: for writers that batch frames into
// buffers of their own.
func AppendFrame(b []byte, id uint64, data []byte) []byte {
	if id > 0 {
		b = append(b, "id: "...)
		b = strconv.AppendUint(b, id, 10)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, bytes.TrimRight(data, "\n")...)
	return append(b, "\n\n"...)
}
