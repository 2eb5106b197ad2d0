package cursor

// ForgetActiveForTest drops path from the in-process registry of owned
// workspaces, as if the run owning it had died with its process.
func ForgetActiveForTest(path string) {
	active.Lock()
	delete(active.paths, path)
	active.Unlock()
}
