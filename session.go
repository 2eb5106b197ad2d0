package agentadaptor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// NewFileSessionStore returns a SessionStore kept in a JSON file at path
// (created with mode 0600, its directory with 0700), so that a session key
// resumes its CLI session across processes (the `agentadaptor run
// --session-key` command uses it). Concurrent processes are serialized per
// write with the file system's rename; the last writer wins a conflict.
func NewFileSessionStore(path string) SessionStore { return &fileSessions{path: path} }

type fileSessions struct {
	mu   sync.Mutex
	path string
}

func (s *fileSessions) read() (map[string]string, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session store %s: %w", s.path, err)
	}
	m := map[string]string{}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("session store %s is not a JSON object of sessions: %w", s.path, err)
		}
	}
	return m, nil
}

func fileSessionKey(adapter, key string) string { return adapter + "\x00" + key }

func (s *fileSessions) Load(_ context.Context, adapter, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read()
	if err != nil {
		return "", false, err
	}
	id, ok := m[fileSessionKey(adapter, key)]
	return id, ok, nil
}

func (s *fileSessions) Save(_ context.Context, adapter, key, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read()
	if err != nil {
		return err
	}
	m[fileSessionKey(adapter, key)] = id
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".sessions-*")
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("session store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}
