package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
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
// With Options.MaxFileBytes the file rotates by size
// (gopkg.in/natefinch/lumberjack.v2): before a record would take it past
// the bound it is renamed NAME-<UTC timestamp>.EXT beside itself and a new
// file begins; each record is one write, so none is ever split across
// files, and OpenFile reads the rotated files back too, oldest first.
// Options.MaxFiles bounds how many rotated files are kept. The rotation
// library keeps one idle goroutine for the rest of the process once a
// rotating File has written (lumberjack v2 offers no way to stop it).
//
// A failing write does not fail the delegation: Err reports it (and the
// host reports itself degraded) until a later write succeeds.
type File struct {
	*Memory

	mu   sync.Mutex
	f    io.WriteCloser // *os.File, or *rotating with MaxFileBytes
	path string
	err  error
}

// OpenFile opens (or creates, mode 0600) the JSONL file at path, loads the
// records it and its rotated files hold and returns the store. Lines that
// are not records are skipped; a file that cannot be read is an error.
func OpenFile(path string, opts Options) (*File, error) {
	if opts.MaxFileBytes < 0 || opts.MaxFiles < 0 {
		return nil, errors.New("audit: MaxFileBytes and MaxFiles must not be negative")
	}
	fs := &File{Memory: NewMemory(opts), path: path}
	if err := fs.load(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if opts.MaxFileBytes == 0 {
		fs.f = f
		return fs, nil
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	fs.f = newRotating(path, opts.MaxFileBytes, opts.MaxFiles, fi.Size())
	return fs, nil
}

func (fs *File) load() error {
	paths, err := rotatedFiles(fs.path)
	if err != nil {
		return err
	}
	fs.Memory.mu.Lock()
	defer fs.Memory.mu.Unlock()
	for _, p := range append(paths, fs.path) {
		if err := fs.loadLocked(p); err != nil {
			return err
		}
	}
	return nil
}

// loadLocked reads the records of one file, in order (a missing file holds
// none).
func (fs *File) loadLocked(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.DelegationID == "" {
			continue
		}
		fs.Memory.putLocked(r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("audit: read %s: %w", path, err)
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
		// One write per record: a rotation happens between records, never
		// inside one.
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

// backupTimeFormat is the timestamp lumberjack puts in a rotated file's
// name (NAME-<timestamp>.EXT, UTC).
const backupTimeFormat = "2006-01-02T15-04-05.000"

// backupName is the name lumberjack gives path when it rotates it at t.
func backupName(path string, t time.Time) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + t.UTC().Format(backupTimeFormat) + ext
}

// rotatedFiles lists the rotated files of path, oldest first.
func rotatedFiles(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: read the directory of %s: %w", path, err)
	}
	type backup struct {
		path string
		at   time.Time
	}
	var out []backup
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ext) || len(name) < len(prefix)+len(ext) {
			continue
		}
		at, err := time.Parse(backupTimeFormat, name[len(prefix):len(name)-len(ext)])
		if err != nil {
			continue // not one of ours
		}
		out = append(out, backup{filepath.Join(dir, name), at})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	paths := make([]string, len(out))
	for i, b := range out {
		paths[i] = b.path
	}
	return paths, nil
}

// rotating is the audit file rotated by size. lumberjack does the
// rotation (rename, new file, deleting beyond MaxBackups); its own size
// bound counts whole megabytes, so rotating decides when, by the byte,
// and calls Rotate, with lumberjack's bound set out of reach.
type rotating struct {
	lj   *lumberjack.Logger
	max  int64
	size int64 // bytes in the file being written
}

func newRotating(path string, maxBytes int64, maxFiles int, size int64) *rotating {
	const mib = 1 << 20
	return &rotating{
		lj: &lumberjack.Logger{Filename: path, MaxBackups: maxFiles,
			MaxSize: int((maxBytes+mib-1)/mib + maxLineBytes/mib + 1)},
		max: maxBytes, size: size,
	}
}

// Write appends p (one record) to the file, rotating first when p would
// take a non-empty file past the bound.
func (r *rotating) Write(p []byte) (int, error) {
	if r.size > 0 && r.size+int64(len(p)) > r.max {
		// lumberjack names a rotated file by the millisecond: two
		// rotations within one would give the second the first's name
		// and lose it. Wait for a name not taken.
		for range 1000 {
			if _, err := os.Stat(backupName(r.lj.Filename, time.Now())); errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err := r.lj.Rotate(); err != nil {
			return 0, err
		}
		r.size = 0
	}
	n, err := r.lj.Write(p)
	r.size += int64(n)
	return n, err
}

// Close closes the file being written.
func (r *rotating) Close() error { return r.lj.Close() }
