package agui

import (
	"context"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor"
)

// WrapWithContext translates a started run's payloads into AG-UI events.
// When opts.RunID is empty the runId is the handle's RunID. See [WrapStream]
// for the channel's lifecycle. It does not cancel the run: the caller, who
// owns the handle, decides what ctx's end means for the run.
func WrapWithContext(ctx context.Context, h *agentadaptor.RunHandle, opts Options) <-chan events.Event {
	if opts.RunID == "" {
		opts.RunID = h.RunID()
	}
	return WrapStream(ctx, h.StreamEvents(), opts)
}

// WrapStream translates payloads into AG-UI events delivered on the returned
// channel. One goroutine, owned by the call, reads payloads until the
// terminal one, translates them and closes the channel after the terminal
// event. If payloads is closed without a terminal payload, the stream is
// completed with [Translator.Close] (RUN_ERROR code [CodeStreamEnded]). If ctx
// ends first, the goroutine stops and closes the channel without a terminal
// event: the consumer is gone. The goroutine never outlives ctx or the
// payload stream.
func WrapStream(ctx context.Context, payloads <-chan agentadaptor.StreamPayload, opts Options) <-chan events.Event {
	out := make(chan events.Event, 64)
	go func() {
		defer close(out)
		tr := NewTranslator(opts)
		var buf []events.Event
		send := func(evs []events.Event) bool {
			for _, ev := range evs {
				select {
				case out <- ev:
				case <-ctx.Done():
					return false
				}
			}
			return true
		}
		for {
			select {
			case p, ok := <-payloads:
				if !ok {
					send(tr.Close(CodeStreamEnded, ""))
					return
				}
				buf = tr.AppendTranslate(buf[:0], p)
				if !send(buf) || tr.Done() {
					return
				}
				clear(buf)
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
