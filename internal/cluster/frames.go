package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/nats-io/nats.go"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
)

// Bounds of one message of the frames stream: a batch holds at most
// maxBatchFrames frames and maxBatchBytes of frame data (NATS messages are
// at most 1 MB by default); a lone frame may be larger, up to the server's
// max payload.
const (
	maxBatchFrames = 1024
	maxBatchBytes  = 256 << 10
)

// wireFrame is one frame as the frames stream carries it.
type wireFrame struct {
	id   uint64
	typ  events.EventType
	data []byte
}

// frameMsg builds the message carrying frames (consecutive ids, at least
// one): a lone frame is its JSON with headers Aa-Id and Aa-Type; a batch
// has Aa-Id (its first frame's id), Aa-N and the frames encoded by
// encodeBatch.
func frameMsg(subject string, frames []*subagentstream.Frame) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Header.Set(hdrID, strconv.FormatUint(frames[0].ID, 10))
	if len(frames) == 1 {
		m.Header.Set(hdrType, string(frames[0].Type))
		m.Data = frames[0].Data
		return m
	}
	m.Header.Set(hdrN, strconv.Itoa(len(frames)))
	m.Data = encodeBatch(frames)
	return m
}

// encodeBatch encodes frames as, for each, its type, a space, the length
// of its JSON in decimal, a newline and the JSON.
func encodeBatch(frames []*subagentstream.Frame) []byte {
	n := 0
	for _, f := range frames {
		n += len(f.Type) + len(f.Data) + 12
	}
	b := make([]byte, 0, n)
	for _, f := range frames {
		b = append(b, f.Type...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(len(f.Data)), 10)
		b = append(b, '\n')
		b = append(b, f.Data...)
	}
	return b
}

var errBadBatch = errors.New("cluster: a malformed message in the frames stream")

// decodeFrames returns the frames a frame message carries (nil for an end
// marker).
func decodeFrames(h nats.Header, data []byte) ([]wireFrame, error) {
	if h.Get(hdrEnd) != "" {
		return nil, nil
	}
	first, err := strconv.ParseUint(h.Get(hdrID), 10, 64)
	if err != nil || first == 0 {
		return nil, fmt.Errorf("%w: Aa-Id %q", errBadBatch, h.Get(hdrID))
	}
	nh := h.Get(hdrN)
	if nh == "" {
		return []wireFrame{{id: first, typ: events.EventType(h.Get(hdrType)), data: data}}, nil
	}
	n, err := strconv.Atoi(nh)
	if err != nil || n < 1 || n > maxBatchFrames {
		return nil, fmt.Errorf("%w: Aa-N %q", errBadBatch, nh)
	}
	out := make([]wireFrame, 0, n)
	for i := range n {
		sp := bytes.IndexByte(data, ' ')
		nl := bytes.IndexByte(data, '\n')
		if sp <= 0 || nl <= sp {
			return nil, fmt.Errorf("%w: frame %d of %d", errBadBatch, i+1, n)
		}
		size, err := strconv.Atoi(string(data[sp+1 : nl]))
		if err != nil || size < 0 || size > len(data)-nl-1 {
			return nil, fmt.Errorf("%w: frame %d of %d", errBadBatch, i+1, n)
		}
		out = append(out, wireFrame{id: first + uint64(i), typ: events.EventType(data[:sp]), data: data[nl+1 : nl+1+size : nl+1+size]})
		data = data[nl+1+size:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the frames", errBadBatch, len(data))
	}
	return out, nil
}

// endOf returns the last frame id of an end marker (ok false for a frame
// message).
func endOf(h nats.Header) (uint64, bool) {
	v := h.Get(hdrEnd)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

// applyMsg applies one message of the frames stream to a mirror; it
// returns the frames it carried.
func applyMsg(m *subagentstream.Mirror, h nats.Header, data []byte) ([]wireFrame, error) {
	if last, ok := endOf(h); ok {
		m.End(last)
		return nil, nil
	}
	frames, err := decodeFrames(h, data)
	if err != nil {
		return nil, err
	}
	for _, f := range frames {
		if err := m.Append(f.id, f.typ, f.data); err != nil {
			return frames, err
		}
	}
	return frames, nil
}

// isTerminal reports whether t ends an AG-UI run.
func isTerminal(t events.EventType) bool {
	return t == events.EventTypeRunFinished || t == events.EventTypeRunError
}
