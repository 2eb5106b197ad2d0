package a2adelegation

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

// AuditEvent is one delegation event as the audit log keeps it.
type AuditEvent struct {
	Seq              uint64              `json:"seq,omitempty"`
	Kind             DelegationEventKind `json:"kind"`
	Time             time.Time           `json:"time"`
	Status           string              `json:"status,omitempty"`
	RemoteTaskID     string              `json:"remote_task_id,omitempty"`
	RemoteMessageID  string              `json:"remote_message_id,omitempty"`
	RemoteArtifactID string              `json:"remote_artifact_id,omitempty"`
	Artifact         *DelegationArtifact `json:"artifact,omitempty"`
	Error            *DelegationError    `json:"error,omitempty"`
	// Text holds delta/status text at AuditFull only (truncated).
	Text string `json:"text,omitempty"`
}

// AuditRecord is everything the host keeps about one delegation (SPEC §2
// auditability): identities on both sides, the card fingerprint, the
// events, the final result and the timings. It never holds secrets: no
// auth refs, no credentials, no run tokens.
type AuditRecord struct {
	DelegationID     string       `json:"delegation_id"`
	RunID            string       `json:"run_id"`
	ParentToolCallID string       `json:"parent_tool_call_id,omitempty"`
	AgentKey         string       `json:"agent_key"`
	AgentName        string       `json:"agent_name,omitempty"`
	Protocol         string       `json:"protocol"`
	Tenant           string       `json:"tenant,omitempty"`
	RemoteTaskID     string       `json:"remote_task_id,omitempty"`
	RemoteContextID  string       `json:"remote_context_id,omitempty"`
	CardFingerprint  string       `json:"card_fingerprint,omitempty"`
	Mode             string       `json:"mode,omitempty"` // streaming | polling
	Objective        string       `json:"objective,omitempty"`
	Status           string       `json:"status"`
	Result           *Result      `json:"result,omitempty"`
	Events           []AuditEvent `json:"events,omitempty"`
	StartedAt        time.Time    `json:"started_at"`
	EndedAt          time.Time    `json:"ended_at,omitzero"`
	DurationMS       int64        `json:"duration_ms,omitempty"`
	// Recovered counts stream recoveries (resubscribe/poll).
	Recovered int `json:"recovered,omitempty"`
	// CancelConfirmed is set when a cancellation was sent: whether the
	// remote confirmed it.
	CancelConfirmed *bool `json:"cancel_confirmed,omitempty"`
}

// AuditStore records delegations. Implementations must be safe for
// concurrent use.
type AuditStore interface {
	// Begin records a delegation that started.
	Begin(rec AuditRecord)
	// Event appends an event to a delegation's record.
	Event(delegationID string, ev AuditEvent)
	// End completes a delegation's record (rec replaces the stored one).
	End(rec AuditRecord)
	// ListRun returns the records of a run, oldest first.
	ListRun(runID string) []AuditRecord
}

// MaxAuditEvents bounds the events kept per delegation record; later
// non-critical events are counted but not kept.
const MaxAuditEvents = 2000

// MemoryAudit is the in-memory AuditStore, optionally also appending every
// completed record as one JSON line to a file (append-only).
type MemoryAudit struct {
	mu     sync.Mutex
	recs   map[string]*AuditRecord
	byRun  map[string][]string
	file   *os.File
	encErr error
}

// NewMemoryAudit returns an in-memory audit store; when jsonlPath is not
// empty, completed records are also appended to that file (created with
// mode 0600). Close closes the file.
func NewMemoryAudit(jsonlPath string) (*MemoryAudit, error) {
	m := &MemoryAudit{recs: map[string]*AuditRecord{}, byRun: map[string][]string{}}
	if jsonlPath != "" {
		f, err := os.OpenFile(jsonlPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		m.file = f
	}
	return m, nil
}

// Begin implements AuditStore.
func (m *MemoryAudit) Begin(rec AuditRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs, m.byRun = map[string]*AuditRecord{}, map[string][]string{}
	}
	r := rec
	m.recs[rec.DelegationID] = &r
	m.byRun[rec.RunID] = append(m.byRun[rec.RunID], rec.DelegationID)
}

// Event implements AuditStore.
func (m *MemoryAudit) Event(delegationID string, ev AuditEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[delegationID]
	if r == nil {
		return
	}
	if len(r.Events) >= MaxAuditEvents && !ev.Kind.Critical() {
		return
	}
	r.Events = append(r.Events, ev)
}

// End implements AuditStore.
func (m *MemoryAudit) End(rec AuditRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs, m.byRun = map[string]*AuditRecord{}, map[string][]string{}
	}
	old := m.recs[rec.DelegationID]
	if old == nil {
		m.byRun[rec.RunID] = append(m.byRun[rec.RunID], rec.DelegationID)
	} else if rec.Events == nil {
		rec.Events = old.Events
	}
	r := rec
	m.recs[rec.DelegationID] = &r
	if m.file != nil {
		b, err := json.Marshal(r)
		if err == nil {
			b = append(b, '\n')
			_, err = m.file.Write(b)
		}
		if err != nil {
			m.encErr = err
		}
	}
}

// ListRun implements AuditStore.
func (m *MemoryAudit) ListRun(runID string) []AuditRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]AuditRecord, 0, len(m.byRun[runID]))
	for _, id := range m.byRun[runID] {
		if r := m.recs[id]; r != nil {
			c := *r
			c.Events = slices.Clone(r.Events)
			out = append(out, c)
		}
	}
	return out
}

// Err returns the last error writing the JSONL file, if any.
func (m *MemoryAudit) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.encErr
}

// Close closes the JSONL file, if any.
func (m *MemoryAudit) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.file == nil {
		return nil
	}
	err := m.file.Close()
	m.file = nil
	return err
}

// auditHandler serves GET /agui/runs/{runId}/delegations: a JSON array of
// the run's AuditRecords.
func auditHandler(store AuditStore) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agui/runs/{runId}/delegations", func(w http.ResponseWriter, r *http.Request) {
		recs := store.ListRun(r.PathValue("runId"))
		if recs == nil {
			recs = []AuditRecord{}
		}
		writeJSON(w, http.StatusOK, recs)
	})
	return mux
}
