package host

import (
	"context"
	"log/slog"
	"sync"

	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
)

// runIDs maps the SDK's run ids to the run ids the host's clients know
// (the AG-UI runId of the run's stream: the client's when it sent one), for
// what the packages that know a run by its SDK id only (the SDK, the
// delegator, the MCP tool server) write where a user reads it: their log
// records and audit records carry run_id, the client's id, and sdk_run_id,
// the SDK's (docs/design.md#observability). Bounded: the oldest mappings
// go first beyond maxRunIDs.
type runIDs struct {
	mu    sync.Mutex
	m     map[string]string // SDK run id -> client run id
	order []string          // SDK run ids, oldest first
}

const maxRunIDs = 100000

func newRunIDs() *runIDs { return &runIDs{m: map[string]string{}} }

// add records that the run with the SDK id sdk is client to its clients.
func (ids *runIDs) add(sdk, client string) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if _, ok := ids.m[sdk]; !ok {
		ids.order = append(ids.order, sdk)
	}
	ids.m[sdk] = client
	if over := len(ids.order) - maxRunIDs; over > 0 {
		for _, old := range ids.order[:over] {
			delete(ids.m, old)
		}
		ids.order = append(ids.order[:0:0], ids.order[over:]...)
	}
}

// client returns the client's run id of the run with the SDK id sdk.
func (ids *runIDs) client(sdk string) (string, bool) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	c, ok := ids.m[sdk]
	return c, ok
}

// rename turns an attribute run_id holding an SDK run id into sdk_run_id,
// preceded by run_id with the client's id when the host knows it.
func (ids *runIDs) rename(a slog.Attr) []slog.Attr {
	sdk := a.Value.String()
	if c, ok := ids.client(sdk); ok {
		return []slog.Attr{slog.String("run_id", c), slog.String("sdk_run_id", sdk)}
	}
	return []slog.Attr{slog.String("sdk_run_id", sdk)}
}

// handler wraps next for the loggers of the packages whose run_id is the
// SDK's: see runIDs. Attributes inside a group are left alone.
func (ids *runIDs) handler(next slog.Handler) slog.Handler { return idHandler{next: next, ids: ids} }

type idHandler struct {
	next    slog.Handler
	ids     *runIDs
	grouped bool
}

func (h idHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h idHandler) Handle(ctx context.Context, r slog.Record) error {
	found := false
	if !h.grouped {
		r.Attrs(func(a slog.Attr) bool {
			found = a.Key == "run_id"
			return !found
		})
	}
	if !found {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "run_id" {
			out.AddAttrs(h.ids.rename(a)...)
		} else {
			out.AddAttrs(a)
		}
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h idHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if h.grouped {
		return idHandler{next: h.next.WithAttrs(as), ids: h.ids, grouped: true}
	}
	out := make([]slog.Attr, 0, len(as)+1)
	for _, a := range as {
		if a.Key == "run_id" {
			out = append(out, h.ids.rename(a)...)
		} else {
			out = append(out, a)
		}
	}
	return idHandler{next: h.next.WithAttrs(out), ids: h.ids}
}

func (h idHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return idHandler{next: h.next.WithGroup(name), ids: h.ids, grouped: true}
}

// audit wraps store so that the records the delegator writes carry the
// client's run id (audit.Record.ClientRunID, JSON run_id) beside the SDK's.
func (ids *runIDs) audit(store audit.Store) audit.Store { return auditIDs{Store: store, ids: ids} }

type auditIDs struct {
	audit.Store
	ids *runIDs
}

func (a auditIDs) name(rec *audit.Record) {
	if rec.ClientRunID == "" {
		rec.ClientRunID, _ = a.ids.client(rec.RunID)
	}
}

func (a auditIDs) Begin(rec audit.Record) { a.name(&rec); a.Store.Begin(rec) }
func (a auditIDs) End(rec audit.Record)   { a.name(&rec); a.Store.End(rec) }
