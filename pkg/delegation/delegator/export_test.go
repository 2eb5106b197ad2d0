package delegator

import "time"

// CleanupDelay exposes cleanupDelay to the tests.
func (d *Delegator) CleanupDelay(attempts int, elapsed time.Duration) (time.Duration, bool) {
	return d.cleanupDelay(attempts, elapsed)
}
