package cursor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// Files the adapter keeps next to the workspace's .cursor/mcp.json while a
// run owns it.
const (
	BackupSuffix = ".agentadaptor-backup" // byte-exact copy of the user's mcp.json
	MarkerSuffix = ".agentadaptor-run"    // JSON: run_id, pid, existed, created_dir
)

// marker records what a run changed, so a crashed run can be undone by the
// next Prepare in the same workspace.
type marker struct {
	RunID      string `json:"run_id"`
	PID        int    `json:"pid"`
	Existed    bool   `json:"existed"`     // mcp.json existed before the run
	CreatedDir bool   `json:"created_dir"` // the run created .cursor/
}

// active holds the mcp.json paths owned by runs of this process.
var active = struct {
	sync.Mutex
	paths map[string]string // path -> run id
}{paths: map[string]string{}}

// workspace manages one run's layered .cursor/mcp.json.
type workspace struct {
	path, backup, marker string
	runID                string
}

func newWorkspace(workDir, runID string) *workspace {
	p := filepath.Join(workDir, ".cursor", "mcp.json")
	return &workspace{path: p, backup: p + BackupSuffix, marker: p + MarkerSuffix, runID: runID}
}

// install merges servers into the workspace's mcp.json, keeping a backup of
// the user's file. It first undoes what a crashed earlier run left behind.
func (w *workspace) install(servers map[string]any) error {
	active.Lock()
	if owner, busy := active.paths[w.path]; busy {
		active.Unlock()
		return &agentadaptor.ConfigError{Field: "cursor workspace", Reason: fmt.Sprintf("%s is in use by run %s; concurrent Cursor runs need distinct work dirs", w.path, owner)}
	}
	active.paths[w.path] = w.runID
	active.Unlock()
	if err := w.installLocked(servers); err != nil {
		w.release()
		return err
	}
	return nil
}

func (w *workspace) release() {
	active.Lock()
	if active.paths[w.path] == w.runID {
		delete(active.paths, w.path)
	}
	active.Unlock()
}

func (w *workspace) installLocked(servers map[string]any) error {
	if err := Recover(filepath.Dir(filepath.Dir(w.path))); err != nil {
		return err
	}
	m := marker{RunID: w.runID, PID: os.Getpid()}
	dir := filepath.Dir(w.path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("cursor: creating %s: %w", dir, err)
		}
		m.CreatedDir = true
	}
	doc := map[string]any{}
	mode := fs.FileMode(0o600)
	orig, err := os.ReadFile(w.path)
	switch {
	case err == nil:
		m.Existed = true
		if fi, err := os.Stat(w.path); err == nil {
			mode = fi.Mode().Perm()
		}
		if len(strings.TrimSpace(string(orig))) > 0 {
			if err := json.Unmarshal(orig, &doc); err != nil {
				return &agentadaptor.ConfigError{Field: "cursor workspace", Reason: fmt.Sprintf("%s is not valid JSON; refusing to modify it", w.path), Err: err}
			}
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return fmt.Errorf("cursor: reading %s: %w", w.path, err)
	}
	// Order matters for crash safety: marker, then backup, then the file.
	if err := writeFileSync(w.marker, mustJSON(m), 0o600); err != nil {
		return err
	}
	if m.Existed {
		if err := writeFileSync(w.backup, orig, mode); err != nil {
			_ = os.Remove(w.marker)
			return err
		}
	}
	merged := map[string]any{}
	if existing, ok := doc["mcpServers"].(map[string]any); ok {
		maps.Copy(merged, existing)
	}
	maps.Copy(merged, servers)
	doc["mcpServers"] = merged
	data, _ := json.MarshalIndent(doc, "", "  ")
	tmp := w.path + ".agentadaptor-tmp"
	if err := writeFileSync(tmp, data, mode); err != nil {
		_ = w.restore()
		return err
	}
	if err := os.Rename(tmp, w.path); err != nil {
		_ = os.Remove(tmp)
		_ = w.restore()
		return err
	}
	return nil
}

// restore undoes the run's change and releases the workspace.
func (w *workspace) restore() error {
	defer w.release()
	return restoreFrom(w.path)
}

// Recover undoes what a crashed run of this adapter left in workDir's
// .cursor/mcp.json: when a marker is present and its run is not active in
// this process (and its process is gone), the user's original file is put
// back. Prepare calls it; hosts may call it at startup.
func Recover(workDir string) error {
	path := filepath.Join(workDir, ".cursor", "mcp.json")
	data, err := os.ReadFile(path + MarkerSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		// A backup without a marker predates any change: drop it.
		_ = os.Remove(path + BackupSuffix)
		return nil
	}
	if err != nil {
		return err
	}
	var m marker
	_ = json.Unmarshal(data, &m)
	active.Lock()
	owner, busy := active.paths[path]
	active.Unlock()
	if busy && owner != m.RunID {
		busy = false
	}
	if busy || (m.PID != os.Getpid() && processAlive(m.PID)) {
		return &agentadaptor.ConfigError{Field: "cursor workspace", Reason: fmt.Sprintf("%s is in use by run %s (pid %d)", path, m.RunID, m.PID)}
	}
	return restoreFrom(path)
}

func restoreFrom(path string) error {
	data, err := os.ReadFile(path + MarkerSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var m marker
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("cursor: unreadable marker %s: %w", path+MarkerSuffix, err)
	}
	_ = os.Remove(path + ".agentadaptor-tmp")
	if m.Existed {
		if _, err := os.Stat(path + BackupSuffix); err == nil {
			if err := os.Rename(path+BackupSuffix, path); err != nil {
				return fmt.Errorf("cursor: restoring %s: %w", path, err)
			}
		}
		// No backup: the crash came before the file was changed.
	} else {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cursor: removing %s: %w", path, err)
		}
	}
	if err := os.Remove(path + MarkerSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if m.CreatedDir {
		_ = os.Remove(filepath.Dir(path)) // only if empty
	}
	return nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func writeFileSync(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("cursor: writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cursor: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
