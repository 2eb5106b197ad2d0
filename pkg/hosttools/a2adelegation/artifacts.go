package a2adelegation

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ArtifactURIPrefix starts every host artifact URI:
// host://delegations/{delegationId}/artifacts/{artifactId}.
const ArtifactURIPrefix = "host://delegations/"

// ArtifactURI returns the host URI of a stored delegation artifact.
func ArtifactURI(delegationID, artifactID string) string {
	return ArtifactURIPrefix + delegationID + "/artifacts/" + artifactID
}

// ParseArtifactURI splits a host artifact URI; ok is false for anything else.
func ParseArtifactURI(uri string) (delegationID, artifactID string, ok bool) {
	rest, found := strings.CutPrefix(uri, ArtifactURIPrefix)
	if !found {
		return "", "", false
	}
	d, a, found := strings.Cut(rest, "/artifacts/")
	if !found || !safeID(d) || !safeID(a) {
		return "", "", false
	}
	return d, a, true
}

// safeID reports whether s is a usable path segment of a host URI.
func safeID(s string) bool {
	return idPattern.MatchString(s) && !strings.Contains(s, "..") && strings.Trim(s, ".") != ""
}

// StoredArtifact is one artifact kept by an ArtifactStore.
type StoredArtifact struct {
	RunID        string
	DelegationID string
	ID           string
	Name         string
	MimeType     string
	Content      []byte
}

// ErrArtifactNotFound is returned by ArtifactStore.Get for an unknown artifact.
var ErrArtifactNotFound = errors.New("artifact not found")

// ErrArtifactStoreFull is returned by ArtifactStore.Put when the store's
// capacity would be exceeded.
var ErrArtifactStoreFull = errors.New("artifact store is full")

// ArtifactStore keeps remote artifacts out of band: events and tool results
// only reference them by URI. Implementations must be safe for concurrent use.
type ArtifactStore interface {
	// Put stores (or replaces) an artifact.
	Put(ctx context.Context, a StoredArtifact) error
	// Get returns the artifact of a delegation of a run.
	Get(ctx context.Context, runID, delegationID, artifactID string) (StoredArtifact, error)
}

// DefaultArtifactStoreBytes bounds a MemoryArtifactStore by default.
const DefaultArtifactStoreBytes = 256 << 20

// MemoryArtifactStore is the in-memory ArtifactStore. When full, the
// oldest artifacts are evicted to make room; an artifact larger than the
// whole capacity is refused with ErrArtifactStoreFull.
type MemoryArtifactStore struct {
	// MaxBytes bounds the total stored content (0: DefaultArtifactStoreBytes).
	MaxBytes int64

	mu    sync.Mutex
	items map[string]StoredArtifact
	order []string
	size  int64
}

// NewMemoryArtifactStore returns an empty store of maxBytes capacity (0: default).
func NewMemoryArtifactStore(maxBytes int64) *MemoryArtifactStore {
	return &MemoryArtifactStore{MaxBytes: maxBytes}
}

func artifactKey(runID, delegationID, id string) string {
	return runID + "\x00" + delegationID + "\x00" + id
}

// Put implements ArtifactStore.
func (m *MemoryArtifactStore) Put(_ context.Context, a StoredArtifact) error {
	limit := m.MaxBytes
	if limit <= 0 {
		limit = DefaultArtifactStoreBytes
	}
	n := int64(len(a.Content))
	if n > limit {
		return ErrArtifactStoreFull
	}
	a.Content = append([]byte(nil), a.Content...)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.items == nil {
		m.items = map[string]StoredArtifact{}
	}
	k := artifactKey(a.RunID, a.DelegationID, a.ID)
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

// Get implements ArtifactStore.
func (m *MemoryArtifactStore) Get(_ context.Context, runID, delegationID, artifactID string) (StoredArtifact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.items[artifactKey(runID, delegationID, artifactID)]
	if !ok {
		return StoredArtifact{}, ErrArtifactNotFound
	}
	return a, nil
}

// ArtifactMeta is the sanitized metadata of a remote artifact.
type ArtifactMeta struct {
	// ID is URL-safe ([A-Za-z0-9_.:-], at most 64 characters).
	ID string
	// Name is printable text of at most 200 bytes (never empty).
	Name string
	// MimeType is a syntactically valid media type or "".
	MimeType string
}

// SanitizeArtifactMeta turns untrusted remote artifact metadata into values
// safe for URIs, file names and UI text. It never fails and never panics.
func SanitizeArtifactMeta(remoteID, name, mimeType string) ArtifactMeta {
	m := ArtifactMeta{ID: sanitizeID(remoteID), Name: sanitizeText(name, 200), MimeType: sanitizeMime(mimeType)}
	if m.ID == "" {
		m.ID = sanitizeID(name)
	}
	if m.Name == "" {
		m.Name = cmpOrStr(m.ID, "artifact")
	}
	return m
}

func cmpOrStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func sanitizeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.', r == ':':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	for strings.Contains(out, "..") {
		out = strings.ReplaceAll(out, "..", "._")
	}
	out = strings.Trim(out, ".")
	if out == "" || strings.Trim(out, "_") == "" {
		return ""
	}
	return out
}

// sanitizeText drops control characters and invalid UTF-8 and bounds the length.
func sanitizeText(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > max {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

func sanitizeMime(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 200 {
		return ""
	}
	mt, params, err := mime.ParseMediaType(s)
	if err != nil || !mediaTypePattern.MatchString(mt) {
		return ""
	}
	if cs, ok := params["charset"]; ok && idPattern.MatchString(cs) {
		return mt + "; charset=" + cs
	}
	return mt
}

// artifactHandler serves stored artifacts:
// GET /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}.
func artifactHandler(store ArtifactStore) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}", func(w http.ResponseWriter, r *http.Request) {
		a, err := store.Get(r.Context(), r.PathValue("runId"), r.PathValue("delegationId"), r.PathValue("artifactId"))
		if err != nil {
			writeJSONError(w, http.StatusNotFound, "artifact_not_found", "no such artifact for this run and delegation")
			return
		}
		ct := a.MimeType
		if ct == "" {
			ct = "application/octet-stream"
		}
		h := w.Header()
		h.Set("Content-Type", ct)
		h.Set("Content-Length", strconv.Itoa(len(a.Content)))
		h.Set("X-Content-Type-Options", "nosniff")
		// Remote content is untrusted: never let it run as a page of the host's origin.
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": sanitizeID(a.Name) + ""}))
		_, _ = w.Write(a.Content)
	})
	return mux
}

// writeJSONError writes {"error":{"code":..,"message":..}}.
func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
