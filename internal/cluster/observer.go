package cluster

import "time"

// Observer receives the cluster's health for the host's metrics
// (docs/design.md#observability): internal/telemetry implements it, so
// this package imports no metrics library. Its methods are called on the
// journal's and the lease's paths: they must be cheap and must not block.
type Observer interface {
	// JournalCommitted reports a batch of frames the journal acknowledged:
	// lag is from its oldest frame's Append to the ack (what this
	// replica's own clients wait, on top of the mux).
	JournalCommitted(lag time.Duration)
	// JournalPending reports the bytes of frames waiting to be published,
	// after each change.
	JournalPending(bytes int)
	// LeaseRenewFailed reports a run's lease that could not be renewed in
	// a round (NATS too slow or away, or the lease lost).
	LeaseRenewFailed()
	// Takeover reports a lost run this replica started ending (resumed:
	// another replica's unfinished takeover).
	Takeover(resumed bool)
	// RunLost reports a run that ended without its own terminal event, by
	// cause: LostLease, LostFenced or LostJournal.
	RunLost(cause string)
	// NATSConnected reports the NATS connection's state when it changes.
	NATSConnected(connected bool)
	// FollowerLag reports, for a frame of another replica's run that this
	// replica serves to a client live, the time from its storage in the
	// journal (the NATS server's clock) to its hand-off to that client's
	// subscription here.
	FollowerLag(d time.Duration)
}

// Causes of Observer.RunLost.
const (
	// LostLease: this replica ended another replica's run whose lease had
	// expired (RUN_ERROR host_lost appended by this replica).
	LostLease = "lease_expired"
	// LostFenced: another replica ended this replica's run (its append was
	// refused, or its lease was taken or its run claimed).
	LostFenced = "fenced"
	// LostJournal: this replica stopped its run because the journal could
	// not carry it (publish buffer overflow; RUN_ERROR journal_lost).
	LostJournal = "journal_lost"
)

type nopObserver struct{}

func (nopObserver) JournalCommitted(time.Duration) {}
func (nopObserver) JournalPending(int)             {}
func (nopObserver) LeaseRenewFailed()              {}
func (nopObserver) Takeover(bool)                  {}
func (nopObserver) RunLost(string)                 {}
func (nopObserver) NATSConnected(bool)             {}
func (nopObserver) FollowerLag(time.Duration)      {}
