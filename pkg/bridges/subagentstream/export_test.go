package subagentstream

// Attached returns the subscribers attached to the stream now (a test's
// window on the clients the hub serves).
func (s *Stream) Attached() []*Subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Subscriber
	for sub := range s.subs {
		out = append(out, sub)
	}
	return out
}

// Peak returns the most frames and JSON bytes the subscriber held of those
// pushed live, and its bounds.
func (sub *Subscriber) Peak() (frames, bytes, maxFrames, maxBytes int) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.peakLive, sub.peakBytes, sub.maxQueued, sub.maxQueuedBytes
}
