package a2a

import (
	"context"
	"errors"
	"testing"
)

// The slot accounting of MaxActiveTasks, including the orders a test over
// the wire cannot force: a request that gives up before its turn claims
// the slot, and a turn that finds no slot left.
func TestSlotAccounting(t *testing.T) {
	ctx := context.Background()
	refused := 0
	e := &Executor{cfg: ExecutorConfig{MaxActiveTasks: 1, OnRefused: func(context.Context) { refused++ }}}
	s, err := e.reserve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.reserve(ctx); !errors.Is(err, ErrTooManyTasks) || refused != 1 {
		t.Fatalf("second reserve: %v (refused %d), want ErrTooManyTasks", err, refused)
	}
	// The turn claims the request's slot; the request's end leaves it.
	release, err := e.claimSlot(withSlot(ctx, s))
	if err != nil {
		t.Fatal(err)
	}
	s.abandon()
	if e.used != 1 {
		t.Fatalf("after the request ended, %d slots used, want the turn's 1", e.used)
	}
	release()
	release()
	if e.used != 0 {
		t.Fatalf("after the turn, %d slots used, want 0", e.used)
	}

	// The request left before its turn began: the turn takes a fresh slot.
	s, _ = e.reserve(ctx)
	s.abandon()
	s.abandon()
	if e.used != 0 {
		t.Fatalf("abandoned slot: %d used", e.used)
	}
	release, err = e.claimSlot(withSlot(ctx, s))
	if err != nil || e.used != 1 {
		t.Fatalf("late turn: %v, %d used", err, e.used)
	}
	// ...unless there is none.
	if _, err := e.claimSlot(withSlot(ctx, s)); !errors.Is(err, ErrTooManyTasks) {
		t.Errorf("a turn without a slot: %v, want ErrTooManyTasks", err)
	}
	release()
	if e.used != 0 {
		t.Errorf("%d used at the end", e.used)
	}

	// Without a bound nothing is counted.
	free := &Executor{}
	if s, err := free.reserve(ctx); s != nil || err != nil {
		t.Errorf("unbounded reserve: %v %v", s, err)
	}
	if release, err := free.claimSlot(ctx); err != nil {
		t.Error(err)
	} else {
		release()
	}
}
