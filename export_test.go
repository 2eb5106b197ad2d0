package agentadaptor

import "time"

// SetPipeDrainBound sets how long a run waits for its exited child's pipes
// to end before it closes them, and returns what restores it (for tests
// that pass the bound without waiting seconds; not for parallel tests).
func SetPipeDrainBound(d time.Duration) (restore func()) {
	old := pipeDrainBound
	pipeDrainBound = d
	return func() { pipeDrainBound = old }
}
