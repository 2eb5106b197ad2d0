package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// maxLineBytes bounds one JSONL line read back by OpenFile.
const maxLineBytes = 16 << 20

// File is a Store that keeps records in memory (bounded like [Memory]) and
// appends each one to a JSONL file when it begins and when it ends: one
// JSON [Record] per line, the last line of a delegation being its current
// state. OpenFile reads the file back, so a restarted host still serves the
// records of earlier runs, and a delegation that was running when the
// process died is visible as "running".
//
// A failing write does not fail the delegation: Err reports it (and the
// host reports itself degraded) until a later write succeeds.
type File struct {
	*Memory

	mu   sync.Mutex
	f    *os.File
	path string
	err  error
}

// OpenFile opens (or creates, mode 0600) the JSONL file at path, loads the
// records it holds and returns the store. Lines that are not records are
// skipped; a file that cannot be read is an error.
func OpenFile(path string, opts Options) (*File, error) {
	fs := &File{Memory: NewMemory(opts), path: path}
	if err := fs.load(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	fs.f = f
	return fs, nil
}

func (fs *File) load() error {
	f, err := os.Open(fs.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: read %s: %w", fs.path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	fs.Memory.mu.Lock()
	defer fs.Memory.mu.Unlock()
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.DelegationID == "" {
			continue
		}
		fs.Memory.putLocked(r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("audit: read %s: %w", fs.path, err)
	}
	return nil
}

// Begin implements Store: the record is kept and appended to the file.
func (fs *File) Begin(rec Record) {
	if rec.Status == "" {
		rec.Status = StatusRunning
	}
	fs.Memory.Begin(rec)
	fs.append(rec)
}

// End implements Store: the record is kept and appended to the file.
func (fs *File) End(rec Record) {
	fs.Memory.End(rec)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.f == nil {
		return
	}
	// The file gets the record with the events the store kept.
	for _, r := range fs.Memory.ListRun(rec.RunID) {
		if r.DelegationID == rec.DelegationID {
			rec = r
		}
	}
	fs.writeLocked(rec)
}

func (fs *File) append(rec Record) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.writeLocked(rec)
}

func (fs *File) writeLocked(rec Record) {
	if fs.f == nil {
		return
	}
	b, err := json.Marshal(rec)
	if err == nil {
		b = append(b, '\n')
		_, err = fs.f.Write(b)
	}
	if err != nil {
		if fs.err == nil {
			fs.Memory.opts.Logger.Error("audit file write failed; records are kept in memory only until it recovers", "path", fs.path, "error", err)
		}
		fs.err = fmt.Errorf("audit: write %s: %w", fs.path, err)
		return
	}
	if fs.err != nil {
		fs.Memory.opts.Logger.Info("audit file writes recovered", "path", fs.path)
	}
	fs.err = nil
}

// Err implements Checker: the last write error, nil once a write succeeded.
func (fs *File) Err() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.err
}

// Close closes the file; the records stay readable in memory.
func (fs *File) Close() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.f == nil {
		return nil
	}
	err := fs.f.Close()
	fs.f = nil
	return err
}
