package subagentstream

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/klauspost/compress/s2"
)

// A stream's replay log (docs/design.md#replay-and-reconnect) is kept in
// two parts: a short tail of the newest frames, each a *Frame of its own,
// and before it a packed prefix. Once the tail holds livePackBytes of JSON
// (or livePackFrames frames) the appending goroutine packs it, outside the
// stream's lock but for the swap, into one block of the prefix: the
// frames' JSON, concatenated and compressed as one S2 block, plus an index of a type
// and a length per frame (ids are consecutive) and the open state at the
// block's start. Nothing a live stream needs of a frame but its JSON
// outlives the tail: its coalescing info serves the subscribers that
// already hold the frame, and its receive time only frames pushed live.
// When the stream ends its remaining tail is packed the same way. A
// subscriber materializes packed frames one block at a time while it reads
// them (replayTail), so that neither the stream nor a reconnecting client
// holds the log decompressed, and decompresses without the stream's lock.

// packBlockBytes is the uncompressed size after which packing an ended
// stream's tail starts a new block: the most a reader decompresses at once
// (a single larger frame is a block of its own).
const packBlockBytes = 64 << 10

// The live tail is packed once it holds livePackBytes of JSON or
// livePackFrames frames: what a live stream holds unpacked is about twice
// that (each frame's struct and coalescing info besides its JSON), while
// blocks stay large enough to compress well.
const (
	livePackBytes  = 24 << 10
	livePackFrames = 128
)

// packedLog is a replay log's packed prefix: the frames from id first on.
// The stream appends blocks to it and drops blocks from its front, under
// its lock; readers take a copy of the struct (under the lock) and read it
// without the lock: appending writes past a copy's length only, dropping
// reslices, and a block never changes once appended.
type packedLog struct {
	types  []events.EventType // the distinct frame types
	typ    []uint8            // frame first+i's type, an index into types
	size   []uint32           // the length of frame first+i's JSON
	first  uint64             // the id of the first frame
	blocks []packedBlock
}

// packedBlock holds the JSON of the frames from id first up to the next
// block's first, concatenated.
type packedBlock struct {
	first  uint64
	raw    int    // the length of the concatenated JSON
	stored bool   // data is the JSON itself (it did not compress)
	data   []byte // the JSON, an S2 block unless stored
	// state is what is open before the block's first frame; never
	// changed (readers clone it), and shared by consecutive blocks while
	// nothing opens or closes. n is the frames applied to it there.
	state *openState
	n     int
}

// S2 (github.com/klauspost/compress/s2, a Snappy extension) packs a block
// of frames about six times faster than flate at its fastest level and
// unpacks it ten times faster, for a block about 10% larger: the live log
// is packed by whoever holds the merge, once per frame of the run, so speed
// is what counts. A packer is the two buffers a block is built in (the
// encoder itself holds no state between blocks); live streams pack a block
// every few dozen frames, so packers are kept in a small free list that
// garbage collection does not empty (a sync.Pool would, and under load
// most blocks would allocate their buffers again).
var idlePackers = make(chan *packer, maxIdlePackers)

// maxIdlePackers bounds the packers kept: packing is short and seldom runs
// on more goroutines at once than the host has cores.
var maxIdlePackers = min(4, runtime.GOMAXPROCS(0))

func getPacker() *packer {
	select {
	case pk := <-idlePackers:
		return pk
	default:
		return new(packer)
	}
}

// putPacker keeps pk unless the free list is full or pk grew past a
// block's size (a single huge frame).
func putPacker(pk *packer) {
	if cap(pk.raw) > 2*packBlockBytes {
		return
	}
	select {
	case idlePackers <- pk:
	default:
	}
}

// packer builds one block at a time: raw is the concatenated JSON, out
// the block encoded.
type packer struct {
	raw, out []byte
}

// packedPart is frames packed and not yet added to a log: blocks and
// their index, with types of its own.
type packedPart struct {
	types  []events.EventType
	typ    []uint8
	size   []uint32
	blocks []packedBlock
	end    *openState // what is open after the last frame
	last   *openState // the state of the last block
}

// packFrames packs frames (their ids consecutive) into blocks of at most
// maxBlock bytes of JSON; st is what is open before the first frame, and is
// consumed. prev, if not nil, is the state of the stream's previous block:
// a block whose start holds the same things open shares it. It returns nil
// when the frames cannot be packed (more than 256 distinct types, a frame
// of 4 GiB): they are then kept as they are.
func packFrames(frames []*Frame, st, prev *openState, maxBlock int) *packedPart {
	p := &packedPart{typ: make([]uint8, len(frames)), size: make([]uint32, len(frames))}
	pk := getPacker()
	defer putPacker(pk)
	first, n := 0, 0
	begin := func(i int) {
		first, n = i, st.n
		if prev == nil || prev.gen != st.gen {
			prev = st.clone()
		}
		pk.raw = pk.raw[:0]
	}
	end := func(i int) {
		if i == first {
			return
		}
		raw := len(pk.raw)
		b := packedBlock{first: frames[first].ID, raw: raw, state: prev, n: n}
		if need := s2.MaxEncodedLen(raw); need < 0 {
			b.data, b.stored = slices.Clone(pk.raw), true // too large for a block
		} else {
			if cap(pk.out) < need {
				pk.out = make([]byte, need)
			}
			if enc := s2.Encode(pk.out[:need], pk.raw); len(enc) < raw {
				b.data = slices.Clone(enc)
			} else {
				b.data, b.stored = slices.Clone(pk.raw), true
			}
		}
		p.blocks = append(p.blocks, b)
	}
	begin(0)
	t := -1
	for i, f := range frames {
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
		if len(pk.raw) > 0 && len(pk.raw)+len(f.Data) > maxBlock {
			end(i)
			begin(i)
		}
		p.typ[i], p.size[i] = uint8(t), uint32(len(f.Data))
		pk.raw = append(pk.raw, f.Data...)
		st.applyFrame(f)
	}
	end(len(frames))
	p.end, p.last = st, prev
	return p
}

// add appends a part whose first frame is the log's next; it reports
// false (and changes nothing) when the log would have more than 256
// distinct types.
func (p *packedLog) add(part *packedPart) bool {
	remap := make([]uint8, len(part.types))
	types := p.types
	for i, t := range part.types {
		j := slices.Index(types, t)
		if j < 0 {
			if len(types) == 256 {
				return false
			}
			j = len(types)
			types = append(types, t)
		}
		remap[i] = uint8(j)
	}
	if p.len() == 0 {
		p.first = part.blocks[0].first
	}
	p.types = types
	for _, t := range part.typ {
		p.typ = append(p.typ, remap[t])
	}
	p.size = append(p.size, part.size...)
	p.blocks = append(p.blocks, part.blocks...)
	return true
}

// dropBlock forgets the first block and its frames.
func (p *packedLog) dropBlock() {
	n := p.len()
	if len(p.blocks) > 1 {
		n = int(p.blocks[1].first - p.first)
	}
	p.typ, p.size, p.blocks = p.typ[n:], p.size[n:], p.blocks[1:]
	p.first += uint64(n)
}

// len returns the number of frames.
func (p *packedLog) len() int { return len(p.typ) }

// frameType returns the type of the log's frame i (id first+i).
func (p *packedLog) frameType(i int) events.EventType { return p.types[p.typ[i]] }

// block returns the index of the block holding frame id.
func (p *packedLog) block(id uint64) int {
	b, found := slices.BinarySearchFunc(p.blocks, id, func(b packedBlock, id uint64) int {
		switch {
		case b.first < id:
			return -1
		case b.first > id:
			return 1
		}
		return 0
	})
	if !found {
		b--
	}
	return b
}

// unpack returns block b's JSON, in a buffer of its own (frames handed out
// keep it).
func (p *packedLog) unpack(b int) ([]byte, error) {
	blk := &p.blocks[b]
	if blk.stored {
		return blk.data, nil // never written to: frames slice it capped
	}
	if n, err := s2.DecodedLen(blk.data); err != nil || n != blk.raw {
		return nil, fmt.Errorf("subagentstream: unpacking a replay log block: its length is %d, not %d (%v)", n, blk.raw, err)
	}
	buf, err := s2.Decode(make([]byte, blk.raw), blk.data)
	if err != nil {
		return nil, fmt.Errorf("subagentstream: unpacking a replay log block: %w", err)
	}
	return buf, nil
}

// packedCursor reads a packed log's frames in order. It is owned by one
// reader; p is its own copy of the log.
type packedCursor struct {
	p   packedLog
	i   int    // the next frame (id p.first+i)
	blk int    // the block holding frame i
	off int    // frame i's offset in its block
	buf []byte // block blk's JSON; nil until needed
}

// cursorAt returns a cursor at the start of the block holding frame id,
// and the open state there (a copy of its own).
func (p *packedLog) cursorAt(id uint64) (*packedCursor, *openState) {
	b := p.block(id)
	blk := &p.blocks[b]
	st := blk.state.clone()
	st.n = blk.n
	return &packedCursor{p: *p, i: int(blk.first - p.first), blk: b}, st
}

// load makes sure block blk's JSON is at hand.
func (c *packedCursor) load() error {
	if c.buf != nil {
		return nil
	}
	buf, err := c.p.unpack(c.blk)
	if err != nil {
		return err
	}
	c.buf = buf
	return nil
}

// data returns frame i's JSON (capped: appending to it copies).
func (c *packedCursor) data() ([]byte, error) {
	if err := c.load(); err != nil {
		return nil, err
	}
	end := c.off + int(c.p.size[c.i])
	return c.buf[c.off:end:end], nil
}

// advance moves to the next frame.
func (c *packedCursor) advance() {
	c.off += int(c.p.size[c.i])
	c.i++
	if c.blk+1 < len(c.p.blocks) && c.p.blocks[c.blk+1].first == c.p.first+uint64(c.i) {
		c.blk, c.off, c.buf = c.blk+1, 0, nil
	}
}

// applyTo applies the frames before id to st (reading the block only if a
// frame changes what is open) and leaves the cursor at frame id.
func (c *packedCursor) applyTo(st *openState, id uint64) error {
	for n := int(id - c.p.first); c.i < n; {
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

// replayTail is what a subscriber still has to read of the packed prefix
// of the log it joined: frames are materialized as they are taken.
type replayTail struct {
	*packedCursor
	s *Stream
}

// needsBlock reports whether the next frame's block is still to be
// decompressed (load, which a subscriber does without its lock).
func (r *replayTail) needsBlock() bool { return r.i < r.p.len() && r.buf == nil }

// next returns the next frame; nil at the end of the log (or when a block
// does not unpack, which cannot happen to a block packFrames wrote: it is
// logged and the replay ends there).
func (r *replayTail) next() *Frame {
	if r.i >= r.p.len() {
		return nil
	}
	data, err := r.data()
	if err != nil {
		r.s.opts.Logger.Error("subagentstream: replay cut short", "run_id", r.s.runID, "id", r.p.first+uint64(r.i), "err", err)
		r.i = r.p.len()
		return nil
	}
	f := &Frame{ID: r.p.first + uint64(r.i), Type: r.p.frameType(r.i), Data: data}
	r.advance()
	return f
}

// remaining returns how many frames next will still return.
func (r *replayTail) remaining() int { return r.p.len() - r.i }
