package artifact

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/seed0634/agentadaptor/internal/sanitize"
)

// URIPrefix starts every host artifact URI:
// host://delegations/{delegationId}/artifacts/{artifactId}.
const URIPrefix = "host://delegations/"

// URI returns the host URI of a stored delegation artifact.
func URI(delegationID, artifactID string) string {
	return URIPrefix + delegationID + "/artifacts/" + artifactID
}

// ParseURI splits a host artifact URI; ok is false for anything else
// (including ids that are not safe path segments).
func ParseURI(uri string) (delegationID, artifactID string, ok bool) {
	rest, found := strings.CutPrefix(uri, URIPrefix)
	if !found {
		return "", "", false
	}
	d, a, found := strings.Cut(rest, "/artifacts/")
	if !found || !sanitize.SafeID(d) || !sanitize.SafeID(a) {
		return "", "", false
	}
	return d, a, true
}

// Stored is one artifact kept by a Store.
type Stored struct {
	RunID        string
	DelegationID string
	ID           string
	Name         string
	MimeType     string
	Content      []byte
}

// ErrNotFound is returned by Store.Get for an unknown artifact.
var ErrNotFound = errors.New("artifact not found")

// ErrStoreFull is returned by Store.Put when the artifact does not fit in
// the store's capacity.
var ErrStoreFull = errors.New("artifact store is full")

// Store keeps remote artifacts. Implementations must be safe for
// concurrent use.
type Store interface {
	// Put stores (or replaces) an artifact. It returns ErrStoreFull when the
	// artifact cannot be kept.
	Put(ctx context.Context, a Stored) error
	// Get returns the artifact of a delegation of a run, or ErrNotFound.
	Get(ctx context.Context, runID, delegationID, artifactID string) (Stored, error)
}

// DefaultMemoryBytes bounds a MemoryStore by default.
const DefaultMemoryBytes = 256 << 20

// MemoryStore is the in-memory Store. When full, the oldest artifacts are
// evicted to make room; an artifact larger than the whole capacity is
// refused with ErrStoreFull. The zero value is ready with the default
// capacity.
type MemoryStore struct {
	// MaxBytes bounds the total stored content (0: DefaultMemoryBytes).
	MaxBytes int64

	mu    sync.Mutex
	items map[string]Stored
	order []string
	size  int64
}

// NewMemoryStore returns an empty store of maxBytes capacity (0: default).
func NewMemoryStore(maxBytes int64) *MemoryStore {
	return &MemoryStore{MaxBytes: maxBytes}
}

func key(runID, delegationID, id string) string {
	return runID + "\x00" + delegationID + "\x00" + id
}

// Put implements Store.
func (m *MemoryStore) Put(_ context.Context, a Stored) error {
	limit := m.MaxBytes
	if limit <= 0 {
		limit = DefaultMemoryBytes
	}
	n := int64(len(a.Content))
	if n > limit {
		return ErrStoreFull
	}
	a.Content = append([]byte(nil), a.Content...)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.items == nil {
		m.items = map[string]Stored{}
	}
	k := key(a.RunID, a.DelegationID, a.ID)
	if old, ok := m.items[k]; ok {
		m.size -= int64(len(old.Content))
		for i, o := range m.order {
			if o == k {
				m.order = append(m.order[:i], m.order[i+1:]...)
				break
			}
		}
	}
	for m.size+n > limit && len(m.order) > 0 {
		oldest := m.order[0]
		m.order = m.order[1:]
		m.size -= int64(len(m.items[oldest].Content))
		delete(m.items, oldest)
	}
	m.items[k] = a
	m.order = append(m.order, k)
	m.size += n
	return nil
}

// Get implements Store.
func (m *MemoryStore) Get(_ context.Context, runID, delegationID, artifactID string) (Stored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.items[key(runID, delegationID, artifactID)]
	if !ok {
		return Stored{}, ErrNotFound
	}
	return a, nil
}

// Meta is the sanitised metadata of a remote artifact.
type Meta struct {
	// ID is URL-safe ([A-Za-z0-9_.:-], at most 64 characters).
	ID string
	// Name is printable text of at most 200 bytes (never empty).
	Name string
	// MimeType is a syntactically valid media type or "".
	MimeType string
}

// SanitizeMeta turns untrusted remote artifact metadata into values safe
// for URIs, file names and UI text. It never fails and never panics.
func SanitizeMeta(remoteID, name, mimeType string) Meta {
	m := Meta{ID: sanitize.ID(remoteID), Name: sanitize.Line(name, 200), MimeType: sanitize.MediaType(mimeType)}
	if m.ID == "" {
		m.ID = sanitize.ID(name)
	}
	if m.Name == "" {
		m.Name = cmp.Or(m.ID, "artifact")
	}
	return m
}

// Handler serves stored artifacts at
// GET /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}
// (mount it at that pattern): the content with its media type, as an
// attachment-safe inline document that cannot run as a page of the host's
// origin; 404 with a JSON error for an unknown artifact.
func Handler(store Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}", func(w http.ResponseWriter, r *http.Request) {
		a, err := store.Get(r.Context(), r.PathValue("runId"), r.PathValue("delegationId"), r.PathValue("artifactId"))
		if err != nil {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
				"code": "artifact_not_found", "message": "no such artifact for this run and delegation"}})
			return
		}
		h := w.Header()
		h.Set("Content-Type", contentType(a.MimeType, a.Content))
		h.Set("Content-Length", strconv.Itoa(len(a.Content)))
		h.Set("X-Content-Type-Options", "nosniff")
		// Remote content is untrusted: never let it run as a page of the host's origin.
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": sanitize.ID(a.Name)}))
		_, _ = w.Write(a.Content)
	})
	return mux
}

// contentType is the Content-Type an artifact is served with: its media
// type, plus "; charset=utf-8" for a text type (text/*, JSON, XML) without
// a charset whose content is valid UTF-8, so that a browser does not decode
// it as windows-1252 (docs/design.md#audit-and-artifacts).
func contentType(mt string, content []byte) string {
	if mt == "" {
		return "application/octet-stream"
	}
	base, params, err := mime.ParseMediaType(mt)
	if err != nil || params["charset"] != "" {
		return mt
	}
	textual := strings.HasPrefix(base, "text/") || base == "application/json" || strings.HasSuffix(base, "+json") ||
		base == "application/xml" || strings.HasSuffix(base, "+xml") || base == "application/javascript"
	if !textual || !utf8.Valid(content) {
		return mt
	}
	return mt + "; charset=utf-8"
}
