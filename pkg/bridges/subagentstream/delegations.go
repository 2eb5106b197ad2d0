package subagentstream

import "github.com/seed0634/agentadaptor/pkg/delegation"

// delegations is the merge's record of a run's delegations and
// of the parent's delegating tool calls, and of how the two pair
// (docs/design.md#correlation): by the parent tool call an event names
// (strong), else by call order (medium), else not yet (the delegation
// waits unclaimed under the run until a call appears). Guarded by the
// merger's mutex, like the merger that holds it.
type delegations struct {
	groups    map[string]*group
	order     []string // delegation ids in start order
	pending   []string // parent delegation tool calls not yet claimed
	unclaimed []string // delegations without a parent tool call
	// seen are the parent's delegating tool calls seen; continued maps a
	// call that continues a delegation to that delegation's id.
	seen      map[string]bool
	continued map[string]string
}

func newDelegations() delegations {
	return delegations{groups: map[string]*group{}, seen: map[string]bool{}, continued: map[string]string{}}
}

// group is one delegation as the mux sees it.
type group struct {
	id, parent string
	last       delegation.DelegationEvent // identity fields of the last event
	started    bool
	terminal   bool
	lastStatus string
	// parked: the delegation returned its question to the parent and waits
	// without a terminal event (delegation.StatusInputReturned); its tool
	// call's result is not held for it.
	parked bool
	// continuations are the parent tool calls that continued the
	// delegation (raw continue_tool_call_id of its input_provided events):
	// their results wait for it like the first call's.
	continuations map[string]bool
	// ident is the identity of the last directly encoded event, shared by
	// the following ones while it stays the same.
	ident *identity
}

// identityFor returns ev's identity, reusing the group's when unchanged
// (no allocation then).
func (g *group) identityFor(runID string, ev *delegation.DelegationEvent) *identity {
	if g.ident == nil || !g.ident.is(runID, ev) {
		id := identityOf(runID, ev)
		g.ident = &id
	}
	return g.ident
}

// record notes ev, about to be emitted, as the delegation's latest event.
func (g *group) record(ev delegation.DelegationEvent) {
	g.last = ev
	if ev.Kind == delegation.DelegationStarted {
		g.started = true
	}
	if ev.Kind.Terminal() {
		g.terminal = true
	}
}

// noteParked follows whether the delegation is parked: its input_returned
// status parks it; anything else of it but a correlated or stream.dropped
// status means it goes on.
func (g *group) noteParked(ev delegation.DelegationEvent) {
	switch {
	case ev.Kind == delegation.DelegationStatus && ev.Status == delegation.StatusInputReturned:
		g.parked = true
	case ev.Kind == delegation.DelegationStatus && (ev.Status == delegation.StatusCorrelated || ev.Status == delegation.StatusStreamDropped):
	default:
		g.parked = false
	}
}

// repeats reports whether ev adds nothing to what the delegation showed: a
// second started, or a status without text that repeats the last one
// (any other status is recorded as the last one).
func (g *group) repeats(ev delegation.DelegationEvent) bool {
	switch {
	case ev.Kind == delegation.DelegationStarted && g.started:
		return true
	case ev.Kind == delegation.DelegationStatus:
		if ev.Status == g.lastStatus && ev.Text == "" {
			return true
		}
		g.lastStatus = ev.Status
	}
	return false
}

// groupOf returns ev's delegation, made on its first event and paired with
// a parent tool call: the one the event names, else the oldest call not
// claimed yet, else none until one appears (unclaimed). A later event that
// names the call pairs a delegation that had none.
func (d *delegations) groupOf(ev delegation.DelegationEvent) *group {
	g := d.groups[ev.DelegationID]
	switch {
	case g == nil:
		g = &group{id: ev.DelegationID, parent: ev.ParentToolCallID}
		d.groups[g.id] = g
		d.order = append(d.order, g.id)
		if g.parent != "" {
			d.pending = remove(d.pending, g.parent)
		} else if len(d.pending) > 0 {
			g.parent = d.pending[0]
			d.pending = d.pending[1:]
		} else {
			d.unclaimed = append(d.unclaimed, g.id)
		}
	case ev.ParentToolCallID != "" && g.parent == "":
		g.parent = ev.ParentToolCallID
		d.unclaimed = remove(d.unclaimed, g.id)
		d.pending = remove(d.pending, g.parent)
	}
	return g
}

// noteContinuation records the parent tool call that continues g (the raw
// continue_tool_call_id of its input_provided status): that call is not
// paired with a new delegation, and its result waits for g.
func (d *delegations) noteContinuation(g *group, ev delegation.DelegationEvent) {
	if ev.Kind != delegation.DelegationStatus || ev.Status != delegation.StatusInputProvided {
		return
	}
	id, _ := ev.Raw["continue_tool_call_id"].(string)
	if id == "" || id == g.parent {
		return
	}
	if g.continuations == nil {
		g.continuations = map[string]bool{}
	}
	g.continuations[id] = true
	d.continued[id] = g.id
	d.pending = remove(d.pending, id)
}

// callStarted records a parent's delegating tool call: it continues a
// delegation already shown (continues), claims the oldest delegation shown
// without a call (claimed, now paired with it), or waits for its
// delegation (pending).
func (d *delegations) callStarted(callID string) (claimed *group, continues bool) {
	d.seen[callID] = true
	if d.continued[callID] != "" {
		return nil, true
	}
	if len(d.unclaimed) > 0 {
		claimed = d.groups[d.unclaimed[0]]
		d.unclaimed = d.unclaimed[1:]
		claimed.parent = callID
		return claimed, false
	}
	d.pending = append(d.pending, callID)
	return nil, false
}

// resultWaits reports whether the result of the parent tool call callID
// must wait for a delegation's terminal event: a delegating call whose
// delegation is open and not parked, or one no delegation claimed yet
// while a delegation without its call is open.
func (d *delegations) resultWaits(callID string) bool {
	if !d.seen[callID] {
		return false
	}
	found := false
	for _, g := range d.groups {
		if g.parent == callID || g.continuations[callID] {
			found = true
			if !g.terminal && !g.parked {
				return true
			}
		}
	}
	return !found || len(d.unclaimed) > 0 && d.anyOpen(d.unclaimed)
}

// hasGroupFor reports whether a delegation is known for the parent tool
// call callID (its first call or a continuing one).
func (d *delegations) hasGroupFor(callID string) bool {
	for _, g := range d.groups {
		if g.parent == callID || g.continuations[callID] {
			return true
		}
	}
	return false
}

// anyOpen reports whether a delegation of ids has not ended.
func (d *delegations) anyOpen(ids []string) bool {
	for _, id := range ids {
		if g := d.groups[id]; g != nil && !g.terminal {
			return true
		}
	}
	return false
}

func remove(list []string, v string) []string {
	for i, x := range list {
		if x == v {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}
