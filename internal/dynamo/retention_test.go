package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/eventlog"
)

func bigEvents(from, to int64, size int) []eventlog.Event {
	var out []eventlog.Event
	for i := from; i <= to; i++ {
		out = append(out, eventlog.Event{ID: i, Name: "answer", Data: fmt.Appendf(nil, `{"delta":%q}`, strings.Repeat("x", size))})
	}
	return out
}

func TestEventLayout(t *testing.T) {
	ctx := context.Background()
	s, client, table, calls := countingStore(t)
	tid, rid := uuid.NewString(), uuid.NewString()
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	evs := bigEvents(1, 40, 30_000) // 1.2 MB
	for i := range evs {
		evs[i].Epoch = 3 // the leg's claim epoch, in the key
	}
	if err := s.AppendEvents(ctx, tid, rid, evs, exp); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"BatchWriteItem": 1}, calls.take()); diff != "" {
		t.Errorf("calls of AppendEvents (-want +got):\n%s", diff)
	}
	raw := rawItems(t, client, table, "TASK#"+tid)
	if len(raw) < 4 {
		t.Fatalf("a 1.2 MB batch in %d items, want at least 4", len(raw))
	}
	next := int64(1)
	for _, sk := range keys(raw) {
		it := raw[sk]
		first, _ := strconv.ParseInt(strings.TrimPrefix(attr(it, "first"), "N:"), 10, 64)
		if want := fmt.Sprintf("EVT#%s#%06d#%010d", rid, evs[0].Epoch, first); sk != want {
			t.Errorf("item %s: first %d, want key %s", sk, first, want)
		}
		if size := len(attr(it, "data")); size > 350_000 {
			t.Errorf("item %s: data of %d bytes, want ≤ 350 KB", sk, size)
		}
		if got, want := attr(it, "ttl"), fmt.Sprint("N:", exp.Unix()); got != want {
			t.Errorf("item %s: ttl %q, want %q", sk, got, want)
		}
		next = max(next, first)
	}
	if _, err := s.ListEvents(ctx, tid, rid, 0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Query": 2}, calls.take()); diff != "" { // a Query returns 1 MB at most
		t.Errorf("calls of ListEvents of 1.2 MB (-want +got):\n%s", diff)
	}
	got, err := s.ListEvents(ctx, tid, rid, next)
	if err != nil || len(got) != int(40-next) {
		t.Errorf("ListEvents(after %d) = %d events, %v; want %d", next, len(got), err, 40-next)
	}
}

func TestIdemLayout(t *testing.T) {
	ctx := context.Background()
	s, client, table, calls := countingStore(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	task := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "acc", UserID: "u1", Status: agent.StatusRunning,
		CreatedAt: at, UpdatedAt: at, Version: 1, NextSeq: 1, WriteID: uuid.NewString()}
	exp := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	rec := &agent.IdemRecord{Key: "k1", BodyHash: "bh", TaskID: task.ID, RequestID: "r1", SessionID: task.SessionID, Expires: exp}
	link := &agent.SessionLink{SessionID: task.SessionID, UserID: "u1", TaskID: task.ID, Agent: "acc", CreatedAt: at}
	if err := s.Write(ctx, &agent.Write{Task: task, Session: link, Idem: rec}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"TransactWriteItems": 1}, calls.take()); diff != "" {
		t.Errorf("calls of a write with an idempotency record (-want +got):\n%s", diff)
	}
	it := rawItems(t, client, table, "IDEM#k1")["IDEM"]
	want := map[string]string{"body_hash": "S:bh", "task_id": "S:" + task.ID, "request_id": "S:r1",
		"session_id": "S:" + task.SessionID, "ttl": fmt.Sprint("N:", exp.Unix())}
	for name, w := range want {
		if got := attr(it, name); got != w {
			t.Errorf("IDEM %s = %q, want %q", name, got, w)
		}
	}

	// A write split in several transactions, whose key is taken, writes nothing.
	other := task.Clone()
	other.ID, other.WriteID, other.NextSeq = uuid.NewString(), uuid.NewString(), 151
	var many []agent.Item
	for i := int64(1); i < 151; i++ {
		many = append(many, agent.Item{Seq: i, RequestID: "r9", Role: agent.RoleTool})
	}
	taken := *rec
	taken.TaskID = other.ID
	err := s.Write(ctx, &agent.Write{Task: other, Items: many, Idem: &taken})
	if !errors.Is(err, agent.ErrIdemExists) {
		t.Fatalf("a split write with a taken key: got %v, want ErrIdemExists", err)
	}
	if raw := rawItems(t, client, table, "TASK#"+other.ID); len(raw) != 0 {
		t.Errorf("a refused split write left %d items", len(raw))
	}
	if got := attr(rawItems(t, client, table, "IDEM#k1")["IDEM"], "task_id"); got != "S:"+task.ID {
		t.Errorf("IDEM task_id after the refused write = %q, want the first task's", got)
	}
}

func TestRetentionLayout(t *testing.T) {
	ctx := context.Background()
	s, client, table, _ := countingStore(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	task := &agent.Task{ID: uuid.NewString(), SessionID: uuid.NewString(), Agent: "acc", UserID: "u1", Status: agent.StatusCompleted,
		CreatedAt: at, UpdatedAt: at, Version: 1, NextSeq: 3, WriteID: uuid.NewString()}
	img := agent.Block{Type: agent.BlockImage, MediaType: "image/png", Data: make([]byte, 500_000)}
	link := &agent.SessionLink{SessionID: task.SessionID, UserID: "u1", TaskID: task.ID, Agent: "acc", CreatedAt: at}
	if err := s.Write(ctx, &agent.Write{Task: task, Session: link,
		Items:    []agent.Item{{Seq: 1, RequestID: "r1", Role: agent.RoleUser, Content: []agent.Block{img}}, {Seq: 2, RequestID: "r1", Role: agent.RoleAssistant}},
		Requests: []agent.RequestRecord{{RequestView: agent.RequestView{RequestID: "r1", Status: agent.StatusCompleted}}}}); err != nil {
		t.Fatal(err)
	}
	soon, later := time.Now().Add(time.Hour).Truncate(time.Second), time.Now().Add(48*time.Hour).Truncate(time.Second)
	until := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	for rid, exp := range map[string]time.Time{"soon": soon, "later": later} {
		if err := s.AppendEvents(ctx, task.ID, rid, bigEvents(1, 2, 10), exp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ExpireTask(ctx, task, until); err != nil {
		t.Fatal(err)
	}
	raw := rawItems(t, client, table, "TASK#"+task.ID)
	if len(raw) < 7 { // META, 2 entries and a part, REQ, two event items
		t.Errorf("items under the task: %v", keys(raw))
	}
	for sk, it := range raw {
		want := until
		if sk == "EVT#soon#000000#0000000001" {
			want = soon // its own ttl comes sooner
		}
		if got := attr(it, "ttl"); got != fmt.Sprint("N:", want.Unix()) {
			t.Errorf("%s ttl = %q, want %d", sk, got, want.Unix())
		}
	}
	idxSK := "TASK#2026-03-01T12:00:00.000000000Z#" + task.ID
	sess := rawItems(t, client, table, "SESSION#"+task.SessionID)
	if got := attr(sess[idxSK], "ttl"); got != fmt.Sprint("N:", until.Unix()) {
		t.Errorf("session index entry ttl = %q, want %d", got, until.Unix())
	}

	if err := s.DeleteTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if raw := rawItems(t, client, table, "TASK#"+task.ID); len(raw) != 0 {
		t.Errorf("items left after DeleteTask: %v", keys(raw))
	}
	if sess := rawItems(t, client, table, "SESSION#"+task.SessionID); len(sess) != 1 || sess["META"] == nil {
		t.Errorf("session items after DeleteTask: %v, want META alone", keys(sess))
	}
}
