package subagentstream

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
)

// An ended stream is kept for Retention so that clients can reconnect
// (docs/design.md#replay-and-reconnect), but nothing is appended to it any
// more, nobody coalesces its frames and nobody times them: each frame's
// struct, coalescing info and receive time only cost memory. When the
// stream ends its replay log is therefore packed once: the frames' JSON,
// concatenated into blocks of about packBlockBytes, each block
// flate-compressed, plus an index of a type and a length per frame (ids are
// consecutive from the stream's firstID). Subscribe walks the index; a
// subscriber of an ended stream materializes its frames one block at a
// time while it is read (replayTail), so that neither the stream nor a
// reconnecting client holds the whole log decompressed.

// packBlockBytes is the uncompressed size after which a packed log starts
// a new block: the most a reader decompresses at once (a single larger
// frame is a block of its own).
const packBlockBytes = 64 << 10

// packedLog is an ended stream's replay log, packed. It is immutable: any
// number of readers use it at once without the stream's lock.
type packedLog struct {
	types  []events.EventType // the distinct frame types
	typ    []uint8            // frame i's type, an index into types
	size   []uint32           // the length of frame i's JSON
	blocks []packedBlock
}

// packedBlock holds the JSON of the frames from first up to the next
// block's first, concatenated.
type packedBlock struct {
	first  int
	raw    int    // the length of the concatenated JSON
	stored bool   // data is the JSON itself (it did not compress)
	data   []byte // the JSON, flate-compressed unless stored
}

// Flate state is large (hundreds of KiB to compress): it is reused across
// streams rather than allocated for every one that ends.
var (
	packers      = sync.Pool{New: func() any { return new(packer) }}
	flateReaders = sync.Pool{New: func() any { return flate.NewReader(nil) }}
)

// packer compresses one block at a time.
type packer struct {
	w   *flate.Writer
	out bytes.Buffer
}

// packLog packs the frames of a log (their ids consecutive). It returns
// nil when the frames cannot be packed (more than 256 distinct types, a
// frame of 4 GiB): the log is then kept as it is.
func packLog(log []*Frame) *packedLog {
	p := &packedLog{typ: make([]uint8, len(log)), size: make([]uint32, len(log))}
	pk := packers.Get().(*packer)
	defer packers.Put(pk)
	first, raw := 0, 0
	begin := func(i int) {
		first, raw = i, 0
		pk.out.Reset()
		if pk.w == nil {
			pk.w, _ = flate.NewWriter(&pk.out, flate.BestSpeed) // a valid level: no error
		} else {
			pk.w.Reset(&pk.out)
		}
	}
	end := func(i int) {
		if i == first {
			return
		}
		_ = pk.w.Close() // writes to a bytes.Buffer: no error
		b := packedBlock{first: first, raw: raw}
		if pk.out.Len() < raw {
			b.data = bytes.Clone(pk.out.Bytes())
		} else {
			b.data, b.stored = make([]byte, 0, raw), true
			for _, f := range log[first:i] {
				b.data = append(b.data, f.Data...)
			}
		}
		p.blocks = append(p.blocks, b)
	}
	begin(0)
	t := -1
	for i, f := range log {
		if t < 0 || p.types[t] != f.Type {
			t = slices.Index(p.types, f.Type)
			if t < 0 {
				if len(p.types) == 256 {
					return nil
				}
				t = len(p.types)
				p.types = append(p.types, f.Type)
			}
		}
		if uint64(len(f.Data)) > 1<<32-1 {
			return nil
		}
		if raw > 0 && raw+len(f.Data) > packBlockBytes {
			end(i)
			begin(i)
		}
		p.typ[i], p.size[i] = uint8(t), uint32(len(f.Data))
		_, _ = pk.w.Write(f.Data)
		raw += len(f.Data)
	}
	end(len(log))
	p.types, p.blocks = slices.Clone(p.types), slices.Clone(p.blocks)
	return p
}

// len returns the number of frames.
func (p *packedLog) len() int { return len(p.typ) }

// frameType returns frame i's type.
func (p *packedLog) frameType(i int) events.EventType { return p.types[p.typ[i]] }

// unpack returns block b's JSON, in a buffer of its own (frames handed out
// keep it).
func (p *packedLog) unpack(b int) ([]byte, error) {
	blk := &p.blocks[b]
	if blk.stored {
		return blk.data, nil // never written to: frames slice it capped
	}
	r := flateReaders.Get().(io.ReadCloser)
	defer flateReaders.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(blk.data), nil); err != nil {
		return nil, err
	}
	buf := make([]byte, blk.raw)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("subagentstream: unpacking a replay log block: %w", err)
	}
	return buf, nil
}

// packedCursor reads a packed log's frames in order, from frame i on.
type packedCursor struct {
	p   *packedLog
	i   int    // the next frame
	blk int    // the block holding frame i
	off int    // frame i's offset in its block
	buf []byte // block blk's JSON; nil until needed
}

// data returns frame i's JSON (capped: appending to it copies).
func (c *packedCursor) data() ([]byte, error) {
	if c.buf == nil {
		buf, err := c.p.unpack(c.blk)
		if err != nil {
			return nil, err
		}
		c.buf = buf
	}
	end := c.off + int(c.p.size[c.i])
	return c.buf[c.off:end:end], nil
}

// advance moves to the next frame.
func (c *packedCursor) advance() {
	c.off += int(c.p.size[c.i])
	c.i++
	if c.blk+1 < len(c.p.blocks) && c.p.blocks[c.blk+1].first == c.i {
		c.blk, c.off, c.buf = c.blk+1, 0, nil
	}
}

// applyTo applies the frames before frame n to st (reading only the
// blocks that hold a frame that changes what is open) and leaves the
// cursor at frame n.
func (c *packedCursor) applyTo(st *openState, n int) error {
	for c.i < n {
		var data []byte
		if t := c.p.frameType(c.i); stateEvent(t) != nil {
			d, err := c.data()
			if err != nil {
				return err
			}
			data = d
		}
		st.applyData(c.p.frameType(c.i), data)
		c.advance()
	}
	return nil
}

// replayTail is what a subscriber of an ended, packed stream still has to
// read of its log: frames are materialized as they are taken.
type replayTail struct {
	packedCursor
	firstID uint64 // the id of the log's frame 0
	s       *Stream
}

// packedTail returns a reader of the stream's packed log from its first
// frame.
func (s *Stream) packedTail() *replayTail {
	return &replayTail{packedCursor: packedCursor{p: s.packed}, firstID: s.firstID, s: s}
}

// next returns the next frame; nil at the end of the log (or when a block
// does not unpack, which cannot happen to a block packLog wrote: it is
// logged and the replay ends there).
func (r *replayTail) next() *Frame {
	if r.i >= r.p.len() {
		return nil
	}
	data, err := r.data()
	if err != nil {
		r.s.opts.Logger.Error("subagentstream: replay cut short", "run_id", r.s.runID, "id", r.firstID+uint64(r.i), "err", err)
		r.i = r.p.len()
		return nil
	}
	f := &Frame{ID: r.firstID + uint64(r.i), Type: r.p.frameType(r.i), Data: data}
	r.advance()
	return f
}

// remaining returns how many frames next will still return.
func (r *replayTail) remaining() int { return r.p.len() - r.i }
