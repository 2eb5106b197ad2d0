package audit

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// Event is one delegation event as the audit keeps it.
type Event struct {
	Seq              uint64                         `json:"seq,omitempty"`
	Kind             delegation.DelegationEventKind `json:"kind"`
	Time             time.Time                      `json:"time"`
	Status           string                         `json:"status,omitempty"`
	RemoteTaskID     string                         `json:"remote_task_id,omitempty"`
	RemoteMessageID  string                         `json:"remote_message_id,omitempty"`
	RemoteArtifactID string                         `json:"remote_artifact_id,omitempty"`
	Artifact         *delegation.DelegationArtifact `json:"artifact,omitempty"`
	Error            *delegation.DelegationError    `json:"error,omitempty"`
	// Text holds delta/status text at audit level "full" only (truncated).
	Text string `json:"text,omitempty"`
}

// Record is everything the host keeps about one delegation. Status is
// "running" from Begin until End records the result status.
//
// A record names its parent run twice (docs/design.md#observability): in
// JSON, run_id is the run's id as the host's clients know it (the AG-UI
// runId of its stream), and sdk_run_id the SDK's id of the run. Records
// written before sdk_run_id existed have only run_id, which held the SDK's
// id: reading one gives RunID that id and ClientRunID "".
type Record struct {
	DelegationID string `json:"delegation_id"`
	// ClientRunID is the parent run's id as the host's clients know it
	// (JSON run_id), when the host named it: pkg/host does. When empty,
	// run_id says RunID.
	ClientRunID string `json:"run_id"`
	// RunID is the parent run's SDK id (agentadaptor.RunHandle.RunID; JSON
	// sdk_run_id): the id the delegation packages and the stores key a run
	// by ([Store.ListRun]).
	RunID            string             `json:"sdk_run_id"`
	ParentToolCallID string             `json:"parent_tool_call_id,omitempty"`
	AgentKey         string             `json:"agent_key"`
	AgentName        string             `json:"agent_name,omitempty"`
	Protocol         string             `json:"protocol"`
	Tenant           string             `json:"tenant,omitempty"`
	RemoteTaskID     string             `json:"remote_task_id,omitempty"`
	RemoteContextID  string             `json:"remote_context_id,omitempty"`
	CardFingerprint  string             `json:"card_fingerprint,omitempty"`
	Mode             string             `json:"mode,omitempty"` // streaming | polling
	Objective        string             `json:"objective,omitempty"`
	Status           string             `json:"status"`
	Result           *delegation.Result `json:"result,omitempty"`
	Events           []Event            `json:"events,omitempty"`
	StartedAt        time.Time          `json:"started_at"`
	EndedAt          time.Time          `json:"ended_at,omitzero"`
	DurationMS       int64              `json:"duration_ms,omitempty"`
	// Recovered counts stream recoveries (resubscribe/poll).
	Recovered int `json:"recovered,omitempty"`
	// CancelConfirmed is set when a cancellation was sent: whether the
	// remote confirmed it.
	CancelConfirmed *bool `json:"cancel_confirmed,omitempty"`
}

// recordJSON is Record without its JSON methods.
type recordJSON Record

// MarshalJSON writes the record; run_id is RunID when ClientRunID is empty.
func (r Record) MarshalJSON() ([]byte, error) {
	if r.ClientRunID == "" {
		r.ClientRunID = r.RunID
	}
	return json.Marshal(recordJSON(r))
}

// UnmarshalJSON reads a record, an older one (without sdk_run_id, whose
// run_id held the SDK's id) included.
func (r *Record) UnmarshalJSON(data []byte) error {
	var v recordJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if v.RunID == "" {
		v.RunID, v.ClientRunID = v.ClientRunID, ""
	}
	*r = Record(v)
	return nil
}

// StatusRunning is the Status of a record between Begin and End.
const StatusRunning = "running"

// Store records delegations. Implementations must be safe for concurrent
// use and must not block for long: the delegator calls them inline.
type Store interface {
	// Begin records a delegation that started.
	Begin(rec Record)
	// Event appends an event to a delegation's record.
	Event(delegationID string, ev Event)
	// End completes a delegation's record (rec replaces the stored one,
	// keeping its events when rec has none).
	End(rec Record)
	// ListRun returns the records of a run, oldest first.
	ListRun(runID string) []Record
}

// Checker is implemented by stores whose writes can fail (a file, a
// remote store): Err reports the last write error, nil when healthy.
type Checker interface {
	Err() error
}

// Defaults of Options.
const (
	// DefaultMaxRecords bounds the records a store keeps.
	DefaultMaxRecords = 10000
	// DefaultMaxAge is how long a finished record is kept.
	DefaultMaxAge = 24 * time.Hour
	// MaxEvents bounds the events kept per record; later non-critical
	// events are not kept.
	MaxEvents = 2000
)

// Options bound a store. Zero values take the defaults.
type Options struct {
	// MaxRecords bounds the records kept; beyond it the oldest finished
	// records are evicted first (DefaultMaxRecords).
	MaxRecords int
	// MaxAge is how long a finished record is kept after it ended
	// (DefaultMaxAge). Running records are never evicted by age.
	MaxAge time.Duration
	// Clock returns the time (time.Now).
	Clock func() time.Time
	// Logger hears when a store's sink starts failing and when it recovers
	// (default: discard).
	Logger *slog.Logger
	// MaxFileBytes, for [OpenFile] only, rotates the file before a record
	// would take it past this many bytes (0: never): the file is renamed
	// with a timestamp and a new one started. A record is never split
	// across files.
	MaxFileBytes int64
	// MaxFiles, for [OpenFile] with MaxFileBytes only, is how many rotated
	// files are kept besides the one being written; older ones are deleted
	// (0: all are kept).
	MaxFiles int
}

func (o *Options) defaults() {
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Memory is the in-memory Store, bounded by count and age. The zero value
// is not ready: use NewMemory.
type Memory struct {
	opts Options

	mu    sync.Mutex
	recs  map[string]*Record
	order []string // delegation ids, oldest first
	byRun map[string][]string
	swept time.Time // last age sweep
}

// NewMemory returns an empty in-memory store.
func NewMemory(opts Options) *Memory {
	opts.defaults()
	return &Memory{opts: opts, recs: map[string]*Record{}, byRun: map[string][]string{}}
}

// Begin implements Store.
func (m *Memory) Begin(rec Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec.Status == "" {
		rec.Status = StatusRunning
	}
	m.putLocked(rec)
}

// putLocked stores rec as the record of its delegation, keeping the old
// record's events when rec has none.
func (m *Memory) putLocked(rec Record) {
	old := m.recs[rec.DelegationID]
	if old == nil {
		m.order = append(m.order, rec.DelegationID)
		m.byRun[rec.RunID] = append(m.byRun[rec.RunID], rec.DelegationID)
	} else if rec.Events == nil {
		rec.Events = old.Events
	}
	r := rec
	m.recs[rec.DelegationID] = &r
	m.evictLocked()
}

// Event implements Store.
func (m *Memory) Event(delegationID string, ev Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[delegationID]
	if r == nil {
		return
	}
	if len(r.Events) >= MaxEvents && !ev.Kind.Critical() {
		return
	}
	r.Events = append(r.Events, ev)
}

// End implements Store.
func (m *Memory) End(rec Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putLocked(rec)
}

// ListRun implements Store.
func (m *Memory) ListRun(runID string) []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictLocked()
	out := make([]Record, 0, len(m.byRun[runID]))
	for _, id := range m.byRun[runID] {
		if r := m.recs[id]; r != nil {
			c := *r
			c.Events = slices.Clone(r.Events)
			out = append(out, c)
		}
	}
	return out
}

// Len returns how many records the store holds.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

// evictLocked drops finished records older than MaxAge, then the oldest
// records (finished first) beyond MaxRecords.
func (m *Memory) evictLocked() {
	now := m.opts.Clock()
	expired := func(r *Record) bool { return !r.EndedAt.IsZero() && now.Sub(r.EndedAt) > m.opts.MaxAge }
	over := len(m.recs) - m.opts.MaxRecords
	if over <= 0 && now.Sub(m.swept) < min(m.opts.MaxAge/16, time.Minute) {
		return
	}
	m.swept = now
	keep := m.order[:0]
	for _, id := range m.order {
		r := m.recs[id]
		if expired(r) || (over > 0 && r.Status != StatusRunning) {
			m.dropLocked(r)
			over--
			continue
		}
		keep = append(keep, id)
	}
	m.order = keep
	for over > 0 && len(m.order) > 0 { // only running records left: the oldest go
		m.dropLocked(m.recs[m.order[0]])
		m.order = m.order[1:]
		over--
	}
}

func (m *Memory) dropLocked(r *Record) {
	delete(m.recs, r.DelegationID)
	ids := slices.DeleteFunc(m.byRun[r.RunID], func(id string) bool { return id == r.DelegationID })
	if len(ids) == 0 {
		delete(m.byRun, r.RunID)
	} else {
		m.byRun[r.RunID] = ids
	}
}

// Handler serves GET /agui/runs/{runId}/delegations (mount it at that
// pattern): a JSON array of the run's records, oldest first; [] for a run
// without delegations.
func Handler(store Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agui/runs/{runId}/delegations", func(w http.ResponseWriter, r *http.Request) {
		recs := store.ListRun(r.PathValue("runId"))
		if recs == nil {
			recs = []Record{}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(recs)
	})
	return mux
}
