package agentadaptor

import (
	"context"
	"sync"
)

// SessionStore remembers which CLI session a host session key maps to, per
// adapter, so a follow-up run with the same key resumes the conversation.
// Keys hold only the adapter name and the host's session key: never per-run
// URLs or tokens, which change on every run.
type SessionStore interface {
	Load(ctx context.Context, adapter, key string) (sessionID string, ok bool, err error)
	Save(ctx context.Context, adapter, key, sessionID string) error
}

// NewMemorySessionStore returns an in-process SessionStore, the SDK default.
func NewMemorySessionStore() SessionStore { return &memorySessions{m: map[[2]string]string{}} }

type memorySessions struct {
	mu sync.Mutex
	m  map[[2]string]string
}

func (s *memorySessions) Load(_ context.Context, adapter, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.m[[2]string{adapter, key}]
	return id, ok, nil
}

func (s *memorySessions) Save(_ context.Context, adapter, key, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[[2]string{adapter, key}] = id
	return nil
}
