// Package runend lets the module's own packages act when a run ends without
// a goroutine per run waiting for it: package agentadaptor calls the
// functions given to [Do] on the goroutine that ends the run, right after
// its RunHandle's Done channel is closed.
//
// It is internal so that the public API stays RunHandle.Done.
package runend

// hook is set by package agentadaptor when it is initialised.
var hook func(h any, f func())

// Set installs the implementation; package agentadaptor calls it once, from
// init.
func Set(f func(h any, f func())) { hook = f }

// Do calls f once the run of h (an *agentadaptor.RunHandle) has ended: on
// the goroutine that ended the run, after Done is closed, or at once on the
// caller's goroutine when the run has already ended. f must be short and
// must not block: it delays the end of the run's supervisor.
func Do(h any, f func()) { hook(h, f) }
