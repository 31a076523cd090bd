package agent

import (
	"errors"
	"testing"
	"time"
)

// TestWrap: an internal error an entry point returns says the operation
// and its ids, and still matches its cause; a client's *Error and the
// engine's signals come back as they are.
func TestWrap(t *testing.T) {
	call := func(cause error) (err error) {
		defer wrap(&err, "resume request %s of task %s", "r1", "t1")
		return cause
	}
	got := call(ErrNotFound)
	if got.Error() != "resume request r1 of task t1: not found" || !errors.Is(got, ErrNotFound) {
		t.Errorf("an internal error: %q (Is ErrNotFound: %v)", got, errors.Is(got, ErrNotFound))
	}
	client := Errorf(CodeNotPaused, "request r1 is not paused")
	if got := call(client); got != error(client) {
		t.Errorf("a client's error: %q, want it as it is", got)
	}
	for _, sig := range []error{ErrBusy, ErrWaiting, nil} {
		if got := call(sig); got != sig {
			t.Errorf("%v: %q, want it as it is", sig, got)
		}
	}
}

type oneAgent struct{ ag *Agent }

func (o oneAgent) Get(name string) (*Agent, bool) { return o.ag, name == o.ag.Name }

// TestPreparedDerivesOnce: what a write owes is derived when it is
// prepared, into a copy: the write itself is left as it was, a write
// prepared again derives the same items (never twice), and an item the
// write carried already that its end also owes is put once.
func TestPreparedDerivesOnce(t *testing.T) {
	ag := &Agent{Name: "acc", Notifications: []Notification{{URL: "http://hooks", Events: []string{EventRequestPaused}}}}
	e := &Engine{Agents: oneAgent{ag}}
	task := &Task{ID: "t1", Agent: "acc", UserID: "alice", Status: StatusPaused, UpdatedAt: time.Now(),
		Active: &ActiveRequest{ID: "r1", Status: StatusPaused, Round: 1, EventCursor: EventCursor{LastEventID: 4}}}
	w := &Write{Task: task, pausing: true}
	first := e.prepared(w)
	again := e.prepared(w)
	if len(w.Outbox) != 0 {
		t.Errorf("the write itself was changed: %d outbox items", len(w.Outbox))
	}
	if len(first.Outbox) != 1 || len(again.Outbox) != 1 {
		t.Fatalf("the pause's webhook derived %d then %d times, want once each", len(first.Outbox), len(again.Outbox))
	}
	w.Outbox = []OutboxItem{first.Outbox[0]}
	if got := e.prepared(w); len(got.Outbox) != 1 {
		t.Errorf("an item the write carried and its pause owes: put %d times, want once", len(got.Outbox))
	}
}
