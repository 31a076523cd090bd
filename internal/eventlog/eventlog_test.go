package eventlog

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// store keeps the batches appended, failing the next n appends.
type store struct {
	mu      sync.Mutex
	batches [][]Event
	fail    int
}

func (s *store) AppendEvents(_ context.Context, _, _ string, events []Event, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return errors.New("the table is away")
	}
	s.batches = append(s.batches, events)
	return nil
}

func ids(batches [][]Event) [][]int64 {
	var out [][]int64
	for _, b := range batches {
		var bi []int64
		for _, ev := range b {
			bi = append(bi, ev.ID)
		}
		out = append(out, bi)
	}
	return out
}

func quiet(string, ...any) {}

// TestWriterBatches: what a leg adds is written in batches under its
// epoch; a batch whose write failed is written with the next one, in
// order; Close writes the rest.
func TestWriterBatches(t *testing.T) {
	s := &store{fail: 1}
	w := New(s, "t1", "r1", 3, TTL, quiet, nil)
	w.Add(1, "request_started", map[string]string{"kind": "invoke"})
	w.Add(2, "answer", map[string]string{"delta": "hi"})
	w.flush(context.Background()) // refused: kept
	w.Add(3, "request_complete", nil)
	w.Close(context.Background())
	if diff := cmp.Diff([][]int64{{1, 2, 3}}, ids(s.batches)); diff != "" {
		t.Fatalf("batches (-want +got):\n%s", diff)
	}
	for _, ev := range s.batches[0] {
		if ev.Epoch != 3 {
			t.Errorf("event %d logged under epoch %d, want 3", ev.ID, ev.Epoch)
		}
	}
	if got := string(s.batches[0][1].Data); got != `{"delta":"hi"}` {
		t.Errorf("the answer's data: %s", got)
	}
}

// TestWriterStopsWhenTheLegLostItsRequest: a writer whose leg no longer
// holds its request (holds says so, or it was abandoned) writes nothing
// more — the leg that took over numbers on from what was written.
func TestWriterStopsWhenTheLegLostItsRequest(t *testing.T) {
	s := &store{}
	var lost atomic.Bool
	w := New(s, "t1", "r1", 1, TTL, quiet, func() bool { return !lost.Load() })
	w.Add(1, "request_started", nil)
	w.flush(context.Background())
	lost.Store(true)
	w.Add(2, "answer", nil)
	w.Close(context.Background())
	w.Add(3, "answer", nil)
	w.flush(context.Background())
	if diff := cmp.Diff([][]int64{{1}}, ids(s.batches)); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
	a := &store{}
	w = New(a, "t1", "r1", 1, TTL, quiet, nil)
	w.Add(1, "request_started", nil)
	w.Abandon()
	w.Add(2, "answer", nil)
	w.Close(context.Background())
	if len(a.batches) != 0 {
		t.Errorf("an abandoned writer wrote %v", ids(a.batches))
	}
}

// TestVisible: a cut hides its epoch's events past its last id; of two
// events with one id (a taken-over leg's copy), the first is kept.
func TestVisible(t *testing.T) {
	events := []Event{{ID: 1, Epoch: 1}, {ID: 2, Epoch: 1}, {ID: 3, Epoch: 1}, {ID: 3, Epoch: 2}, {ID: 4, Epoch: 2}}
	got := Visible(events, []Cut{{Epoch: 1, Last: 2}})
	want := []Event{{ID: 1, Epoch: 1}, {ID: 2, Epoch: 1}, {ID: 3, Epoch: 2}, {ID: 4, Epoch: 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Visible (-want +got):\n%s", diff)
	}
	if got := Visible([]Event{{ID: 5, Epoch: 1}, {ID: 5, Epoch: 2}}, nil); len(got) != 1 || got[0].Epoch != 1 {
		t.Errorf("two events of one id: %+v, want the first", got)
	}
}
