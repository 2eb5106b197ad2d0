package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
)

// maxRecordBytes bounds one audit record in the KV bucket (NATS messages
// are at most 1 MB by default): beyond it, non-critical events are left out.
const maxRecordBytes = 900 << 10

// maxAuditQueue bounds the audit writes waiting for NATS.
const maxAuditQueue = 10000

// AuditStore is an audit.Store shared by every replica: records live in
// AuditBucket (key token(runId).token(delegationId)), written like the
// file store writes its lines — when a delegation begins, when the remote
// names its task, and when it ends — so that a replica that dies leaves
// each running record with its remote task id, for the survivor that ends
// it. Events between those writes are kept in this replica's memory (an
// audit.Memory) and written with the end. Writes are asynchronous (a
// bounded queue and a writer goroutine owned by the Cluster): a store that
// cannot write reports it through Err, and the host reports itself
// degraded.
type AuditStore struct {
	c     *Cluster
	mem   *audit.Memory
	wakeC chan struct{}

	mu    sync.Mutex
	q     []audit.Record
	named map[string]bool   // delegations whose remote task id was written
	runOf map[string]string // delegation -> run, of the records written here
	err   error
	idle  chan struct{}

	queued, settled uint64        // writes enqueued, and those written or dropped, so far
	progress        chan struct{} // closed (and replaced) when settled grows
}

var _ audit.Store = (*AuditStore)(nil)
var _ audit.Checker = (*AuditStore)(nil)

func newAuditStore(c *Cluster) *AuditStore {
	return &AuditStore{c: c, mem: audit.NewMemory(audit.Options{Logger: c.cfg.Logger}), wakeC: make(chan struct{}, 1), named: map[string]bool{}}
}

// Audit returns the cluster's audit store.
func (c *Cluster) Audit() *AuditStore { return c.audit }

func auditKey(runID, delegationID string) string { return token(runID) + "." + token(delegationID) }

// Begin implements audit.Store.
func (s *AuditStore) Begin(rec audit.Record) {
	if rec.Status == "" {
		rec.Status = audit.StatusRunning
	}
	s.mem.Begin(rec)
	if rec.RemoteTaskID != "" {
		s.mu.Lock()
		s.named[rec.DelegationID] = true
		s.mu.Unlock()
	}
	s.enqueue(rec)
}

// Event implements audit.Store; the first event naming the remote task
// writes the record with it.
func (s *AuditStore) Event(delegationID string, ev audit.Event) {
	s.mem.Event(delegationID, ev)
	if ev.RemoteTaskID == "" {
		return
	}
	s.mu.Lock()
	first := !s.named[delegationID]
	s.named[delegationID] = true
	s.mu.Unlock()
	if !first {
		return
	}
	if rec, ok := s.local(delegationID); ok {
		rec.RemoteTaskID = ev.RemoteTaskID
		s.enqueue(rec)
	}
}

// End implements audit.Store.
func (s *AuditStore) End(rec audit.Record) {
	s.mem.End(rec)
	s.mu.Lock()
	delete(s.named, rec.DelegationID)
	s.mu.Unlock()
	if r, ok := s.localRun(rec.RunID, rec.DelegationID); ok {
		rec = r // with the events the memory kept
	}
	s.enqueue(rec)
}

func (s *AuditStore) local(delegationID string) (audit.Record, bool) {
	runID, ok := s.byDelegation(delegationID)
	if !ok {
		return audit.Record{}, false
	}
	return s.localRun(runID, delegationID)
}

// byDelegation finds the run of a delegation this replica began.
func (s *AuditStore) byDelegation(delegationID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runOf[delegationID]
	return r, ok
}

func (s *AuditStore) localRun(runID, delegationID string) (audit.Record, bool) {
	for _, r := range s.mem.ListRun(runID) {
		if r.DelegationID == delegationID {
			return r, true
		}
	}
	return audit.Record{}, false
}

// ListRun implements audit.Store: the records every replica wrote, with
// this replica's own (which hold the events so far) where it has them; an
// ended record wins over a running one.
func (s *AuditStore) ListRun(runID string) []audit.Record {
	byID := map[string]audit.Record{}
	ctx, cancel := context.WithTimeout(s.c.ctx, 10*time.Second)
	defer cancel()
	if w, err := s.c.auditKV.Watch(ctx, token(runID)+".*", jetstream.IgnoreDeletes()); err == nil {
	read:
		for {
			select {
			case e := <-w.Updates():
				if e == nil {
					break read
				}
				var r audit.Record
				if json.Unmarshal(e.Value(), &r) == nil && r.RunID == runID {
					byID[r.DelegationID] = r
				}
			case <-ctx.Done():
				break read
			}
		}
		_ = w.Stop()
	}
	for _, r := range s.mem.ListRun(runID) {
		if s.c.fenced.has(runID) {
			break // the records of the replica that ended the run
		}
		if old, ok := byID[r.DelegationID]; ok && !old.EndedAt.IsZero() && r.EndedAt.IsZero() {
			continue
		}
		byID[r.DelegationID] = r
	}
	out := make([]audit.Record, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out
}

// Err implements audit.Checker: the last write error, nil once a write
// succeeded.
func (s *AuditStore) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *AuditStore) wake() {
	select {
	case s.wakeC <- struct{}{}:
	default:
	}
}

func (s *AuditStore) enqueue(rec audit.Record) {
	if s.c.fenced.has(rec.RunID) {
		return // another replica ended the run: its records are that replica's
	}
	s.mu.Lock()
	if s.runOf == nil {
		s.runOf = map[string]string{}
	}
	if len(s.runOf) > 4*maxAuditQueue {
		clear(s.runOf)
	}
	s.runOf[rec.DelegationID] = rec.RunID
	if len(s.q) >= maxAuditQueue {
		s.err = fmt.Errorf("cluster: %d audit writes wait for NATS; dropping the oldest", len(s.q))
		s.q = s.q[1:]
		s.settledLocked()
	}
	s.q = append(s.q, rec)
	s.queued++
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	s.mu.Unlock()
	s.wake()
}

// flush waits until every queued write is done or ctx ends.
func (s *AuditStore) flush(ctx context.Context) {
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// settledLocked counts one queued write as written (or dropped).
func (s *AuditStore) settledLocked() {
	s.settled++
	if s.progress != nil {
		close(s.progress)
		s.progress = nil
	}
}

// settle waits until every write enqueued before the call was written (or
// dropped), or ctx ends; unlike flush, later writes do not delay it.
func (s *AuditStore) settle(ctx context.Context) error {
	s.mu.Lock()
	target := s.queued
	for s.settled < target {
		if s.progress == nil {
			s.progress = make(chan struct{})
		}
		ch := s.progress
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
	return nil
}

// run is the writer goroutine (owned by the Cluster).
func (s *AuditStore) run() {
	c := s.c
	for {
		s.mu.Lock()
		var rec audit.Record
		have := len(s.q) > 0
		if have {
			rec = s.q[0]
		}
		s.mu.Unlock()
		if !have || !c.connected.Load() {
			select {
			case <-s.wakeC:
			case <-c.ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		err := s.write(rec)
		s.mu.Lock()
		if err != nil {
			if s.err == nil {
				c.log.Error("cluster: audit writes fail; records are kept in memory until they recover", "err", err)
			}
			s.err = err
			s.mu.Unlock()
			if !c.sleep(500 * time.Millisecond) {
				return
			}
			continue
		}
		if s.err != nil {
			c.log.Info("cluster: audit writes recovered")
		}
		s.err = nil
		s.q = s.q[1:]
		s.settledLocked()
		if len(s.q) == 0 {
			s.q = nil
			if s.idle != nil {
				close(s.idle)
				s.idle = nil
			}
		}
		s.mu.Unlock()
	}
}

func (s *AuditStore) write(rec audit.Record) error {
	data, err := fitRecord(rec)
	if err != nil {
		return nil // cannot happen for a Record; nothing to retry
	}
	ctx, cancel := s.c.kvCtx(s.c.ctx)
	defer cancel()
	_, err = s.c.auditKV.Put(ctx, auditKey(rec.RunID, rec.DelegationID), data)
	return err
}

// fitRecord encodes rec within maxRecordBytes, leaving out non-critical
// events (then every event) when it must.
func fitRecord(rec audit.Record) ([]byte, error) {
	data, err := json.Marshal(rec)
	if err != nil || len(data) <= maxRecordBytes {
		return data, err
	}
	var critical []audit.Event
	for _, ev := range rec.Events {
		if ev.Kind.Critical() {
			critical = append(critical, ev)
		}
	}
	rec.Events = critical
	if data, err = json.Marshal(rec); err != nil || len(data) <= maxRecordBytes {
		return data, err
	}
	rec.Events = nil
	return json.Marshal(rec)
}
