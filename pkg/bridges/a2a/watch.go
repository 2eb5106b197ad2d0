package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// maxWatcherBacklog bounds the events a subscriber of an idle task may have
// pending; a subscriber that falls further behind is ended with
// errWatcherBehind (it can read the task with GetTask).
const maxWatcherBacklog = 4096

var errWatcherBehind = errors.New("a2a bridge: the subscriber fell behind the task's events; read the task with GetTask")

// watcher receives copies of the events the executor produces for one task
// while a SubscribeToTask waits on it between turns (docs/design.md#event-mapping).
// The executor's turns push; one subscriber pops. Its queue is bounded.
type watcher struct {
	mu     sync.Mutex
	queue  []a2a.Event
	err    error // set once the watcher ended (closed executor, backlog)
	signal chan struct{}
}

func newWatcher() *watcher { return &watcher{signal: make(chan struct{}, 1)} }

func (w *watcher) notify() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *watcher) push(ev a2a.Event) {
	w.mu.Lock()
	switch {
	case w.err != nil:
	case len(w.queue) >= maxWatcherBacklog:
		w.err, w.queue = errWatcherBehind, nil
	default:
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	w.notify()
}

// end stops the watcher with err once its queue is drained.
func (w *watcher) end(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.notify()
}

// next returns the next event, or the error that ended the watcher, or
// ctx's error.
func (w *watcher) next(ctx context.Context) (a2a.Event, error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			ev := w.queue[0]
			w.queue[0] = nil
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return ev, nil
		}
		err := w.err
		w.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-w.signal:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// watch registers a watcher of task id. busy reports whether a turn (an
// Execute or Cancel) of the task is in progress at registration: its events
// began before the watcher existed, so the caller should attach to the
// running execution instead. stop unregisters the watcher.
func (e *Executor) watch(id a2a.TaskID) (w *watcher, busy bool, stop func()) {
	w = newWatcher()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		w.end(ErrClosed)
		return w, false, func() {}
	}
	ws := e.watchers[id]
	if ws == nil {
		ws = map[*watcher]struct{}{}
		e.watchers[id] = ws
	}
	ws[w] = struct{}{}
	return w, e.turns[id] > 0, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if ws := e.watchers[id]; ws != nil {
			delete(ws, w)
			if len(ws) == 0 {
				delete(e.watchers, id)
			}
		}
	}
}

// tee wraps a turn's yield so that the task's watchers receive a copy of
// every event before a2a-go processes it. A watcher registered while the
// turn runs may miss its events: watch reports it busy, so its subscriber
// attaches to the running execution instead.
func (e *Executor) tee(id a2a.TaskID, yield func(a2a.Event, error) bool) func(a2a.Event, error) bool {
	return func(ev a2a.Event, err error) bool {
		if ev != nil {
			e.mu.Lock()
			ws := make([]*watcher, 0, len(e.watchers[id]))
			for w := range e.watchers[id] {
				ws = append(ws, w)
			}
			e.mu.Unlock()
			for _, w := range ws {
				w.push(cloneEvent(ev))
			}
		}
		return yield(ev, err)
	}
}

func (e *Executor) endTurn(id a2a.TaskID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.turns[id]--; e.turns[id] <= 0 {
		delete(e.turns, id)
	}
}

// cloneEvent deep-copies an event through its wire form, so that readers of
// the copy never share memory with a2a-go's processing of the original.
func cloneEvent(ev a2a.Event) a2a.Event {
	b, err := json.Marshal(a2a.StreamResponse{Event: ev})
	if err != nil {
		return ev
	}
	var sr a2a.StreamResponse
	if err := json.Unmarshal(b, &sr); err != nil || sr.Event == nil {
		return ev
	}
	return sr.Event
}
