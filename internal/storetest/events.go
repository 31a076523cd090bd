package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/eventlog"
)

// events returns the events from..to, their data tagged (and padded to pad
// bytes when pad > 0).
func events(from, to int64, tag string, pad int) []eventlog.Event {
	var out []eventlog.Event
	for i := from; i <= to; i++ {
		delta := fmt.Sprintf("%s %d", tag, i)
		if pad > 0 {
			delta += strings.Repeat("é", pad/2)
		}
		out = append(out, eventlog.Event{ID: i, Name: "answer", Data: fmt.Appendf(nil, `{"delta":%q}`, delta)})
	}
	return out
}

func appendEvents(tb testing.TB, s agent.Store, taskID, rid string, evs []eventlog.Event, expires time.Time) {
	tb.Helper()
	if err := s.AppendEvents(context.Background(), taskID, rid, evs, expires); err != nil {
		tb.Fatalf("AppendEvents(%d..%d): %v", evs[0].ID, evs[len(evs)-1].ID, err)
	}
}

func wantEvents(tb testing.TB, s agent.Store, taskID, rid string, after int64, want []eventlog.Event) {
	tb.Helper()
	got, err := s.ListEvents(context.Background(), taskID, rid, after)
	if err != nil {
		tb.Fatalf("ListEvents(after %d): %v", after, err)
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		tb.Errorf("ListEvents(after %d) (-want +got):\n%s", after, diff)
	}
}

func testEvents(t *testing.T, s agent.Store) {
	tid, rid, other := id(), id(), id()
	exp := time.Now().Add(eventlog.TTL)
	appendEvents(t, s, tid, rid, events(1, 5, "a", 0), exp)
	appendEvents(t, s, tid, rid, events(6, 9, "a", 0), exp)
	appendEvents(t, s, tid, rid, events(10, 14, "a", 0), exp)
	appendEvents(t, s, tid, other, events(1, 3, "b", 0), exp)

	all := events(1, 14, "a", 0)
	for _, after := range []int64{0, 3, 5, 9, 13} {
		wantEvents(t, s, tid, rid, after, all[after:])
	}
	wantEvents(t, s, tid, rid, 14, nil)
	wantEvents(t, s, tid, rid, 99, nil)
	wantEvents(t, s, tid, other, 0, events(1, 3, "b", 0))
	wantEvents(t, s, tid, id(), 0, nil)
	wantEvents(t, s, id(), rid, 0, nil)
}

// testEventsRetried: appending a batch again, or again with more events (the
// event log keeps a failed batch and adds to it), duplicates nothing.
func testEventsRetried(t *testing.T, s agent.Store) {
	tid, rid := id(), id()
	exp := time.Now().Add(eventlog.TTL)
	appendEvents(t, s, tid, rid, events(1, 4, "a", 0), exp)
	appendEvents(t, s, tid, rid, events(5, 8, "a", 0), exp)
	appendEvents(t, s, tid, rid, events(5, 8, "a", 0), exp)
	wantEvents(t, s, tid, rid, 0, events(1, 8, "a", 0))
	appendEvents(t, s, tid, rid, events(5, 11, "a", 0), exp)
	wantEvents(t, s, tid, rid, 0, events(1, 11, "a", 0))
	wantEvents(t, s, tid, rid, 6, events(7, 11, "a", 0))
}

// testEventsBig: a batch over 350 KB reads back whole (DynamoDB splits it).
func testEventsBig(t *testing.T, s agent.Store) {
	tid, rid := id(), id()
	exp := time.Now().Add(eventlog.TTL)
	appendEvents(t, s, tid, rid, events(1, 2, "small", 0), exp)
	big := events(3, 42, "big", 30_000) // 40 events of 30 KB: 1.2 MB
	appendEvents(t, s, tid, rid, big, exp)
	appendEvents(t, s, tid, rid, events(43, 44, "small", 0), exp)
	want := append(append(events(1, 2, "small", 0), big...), events(43, 44, "small", 0)...)
	wantEvents(t, s, tid, rid, 0, want)
	wantEvents(t, s, tid, rid, 20, want[20:])
	wantEvents(t, s, tid, rid, 42, want[42:])
	appendEvents(t, s, tid, rid, big, exp) // retried
	wantEvents(t, s, tid, rid, 0, want)
}

// testEventsExpired: batches whose ttl has passed are absent.
func testEventsExpired(t *testing.T, s agent.Store) {
	tid, rid := id(), id()
	appendEvents(t, s, tid, rid, events(1, 3, "a", 0), time.Now().Add(-time.Minute))
	appendEvents(t, s, tid, rid, events(4, 5, "a", 0), time.Now().Add(time.Hour))
	wantEvents(t, s, tid, rid, 0, events(4, 5, "a", 0))
	wantEvents(t, s, tid, rid, 2, events(4, 5, "a", 0))
}

// testEventsExtended: extending moves every live batch's expiry to the
// later time; an expired batch stays gone, a later one keeps its own.
func testEventsExtended(t *testing.T, s agent.Store) {
	ctx := context.Background()
	tid, rid := id(), id()
	soon := time.Now().Add(time.Second)
	appendEvents(t, s, tid, rid, events(1, 2, "a", 0), time.Now().Add(-time.Minute))
	appendEvents(t, s, tid, rid, events(3, 4, "a", 0), soon)
	appendEvents(t, s, tid, rid, events(5, 6, "a", 0), soon)
	appendEvents(t, s, tid, rid, events(7, 8, "a", 0), time.Now().Add(48*time.Hour))
	if err := s.ExtendEvents(ctx, tid, rid, time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("ExtendEvents: %v", err)
	}
	if err := s.ExtendEvents(ctx, id(), rid, time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("ExtendEvents of an unknown task: %v", err)
	}
	time.Sleep(time.Until(soon.Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
	wantEvents(t, s, tid, rid, 0, events(3, 8, "a", 0))
}

// readAll reads the log page by page from its start, failing on a page that
// passes eventlog.PageBytes by more than one item of 350 KB; it returns
// the events, the pages read and the last page's Next.
func readAll(tb testing.TB, s agent.Store, taskID, rid string, after int64) ([]eventlog.Event, int, eventlog.Pos) {
	tb.Helper()
	var out []eventlog.Event
	var from eventlog.Pos
	for pages := 1; ; pages++ {
		page, err := s.ReadEvents(context.Background(), taskID, rid, from, after)
		if err != nil {
			tb.Fatalf("ReadEvents(%+v, after %d): %v", from, after, err)
		}
		size := 0
		for _, e := range page.Events {
			size += len(e.Data)
		}
		if size > eventlog.PageBytes+350_000 {
			tb.Errorf("a page of %d events holds %d bytes of data", len(page.Events), size)
		}
		out = append(out, page.Events...)
		if !page.More {
			return out, pages, page.Next
		}
		if page.Next == from {
			tb.Fatalf("ReadEvents(%+v) answered More and no progress", from)
		}
		from = page.Next
	}
}

// testEventsPaged: a log of 1.3 MB reads in pages of about 1 MB, in log
// order (by epoch, then id), each event once, from any after; the last
// page's Next reads a grown batch again; expired batches are absent.
func testEventsPaged(t *testing.T, s agent.Store) {
	ctx := context.Background()
	tid, rid := id(), id()
	exp := time.Now().Add(eventlog.TTL)
	epoch := func(n int, evs []eventlog.Event) []eventlog.Event {
		for i := range evs {
			evs[i].Epoch = n
		}
		return evs
	}
	appendEvents(t, s, tid, rid, epoch(1, events(1, 3, "gone", 0)), time.Now().Add(-time.Minute))
	first := epoch(1, events(4, 5, "small", 0))
	big := epoch(1, events(6, 45, "big", 30_000)) // 1.2 MB: DynamoDB cuts it in four
	late := epoch(1, events(46, 47, "late", 0))   // a stalled holder's, after the takeover
	taker := epoch(2, events(46, 50, "taker", 0))
	appendEvents(t, s, tid, rid, first, exp)
	appendEvents(t, s, tid, rid, big, exp)
	appendEvents(t, s, tid, rid, taker, exp)
	appendEvents(t, s, tid, rid, late, exp)
	logOrder := append(append(append(append([]eventlog.Event{}, first...), big...), late...), taker...)

	got, pages, next := readAll(t, s, tid, rid, 0)
	if diff := cmp.Diff(logOrder, got, opts); diff != "" {
		t.Errorf("ReadEvents page by page (-want +got):\n%s", diff)
	}
	if pages < 2 {
		t.Errorf("1.3 MB read in %d page, want pages of about 1 MB", pages)
	}
	for _, after := range []int64{4, 20, 45, 47} {
		got, _, _ := readAll(t, s, tid, rid, after)
		var want []eventlog.Event
		for _, e := range logOrder {
			if e.ID > after {
				want = append(want, e)
			}
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("ReadEvents after %d (-want +got):\n%s", after, diff)
		}
	}

	// The last batch, flushed again with more (a retry), is read again
	// from the last page's Next.
	grown := epoch(2, events(46, 53, "taker", 0))
	appendEvents(t, s, tid, rid, grown, exp)
	page, err := s.ReadEvents(ctx, tid, rid, next, 50)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(grown[5:], page.Events, opts); diff != "" || page.More {
		t.Errorf("ReadEvents from the last page's Next %+v, more %v (-want +got):\n%s", next, page.More, diff)
	}

	for _, c := range []struct{ tid, rid string }{{tid, id()}, {id(), rid}} {
		page, err := s.ReadEvents(ctx, c.tid, c.rid, eventlog.Pos{}, 0)
		if err != nil || len(page.Events) != 0 || page.More || page.Next != (eventlog.Pos{}) {
			t.Errorf("ReadEvents of an unknown log = %+v, %v; want an empty last page", page, err)
		}
	}
}
