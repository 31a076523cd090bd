package agent

import (
	"errors"
	"testing"
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
