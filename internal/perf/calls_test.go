package perf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/perf"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// dynamoEnv is an engine on a fresh DynamoDB Local table whose client counts.
func dynamoEnv(tb testing.TB) (*enginetest.Env, *perf.Counter) {
	tb.Helper()
	store, c := countedStore(tb)
	env := enginetest.New(tb, store)
	env.E.Log = slog.New(slog.DiscardHandler)
	env.E.Now = nil // real time: DynamoDB Local's ttl reads use it
	return env, c
}

// countedStore is a fresh DynamoDB Local table whose client counts.
func countedStore(tb testing.TB) (*dynamo.Store, *perf.Counter) {
	tb.Helper()
	base := ddblocal.Client(tb)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), base, table); err != nil {
		tb.Fatal(err)
	}
	c := perf.NewCounter()
	return dynamo.New(c.Client(base), table), c
}

// seed appends n history entries of size bytes each to the task.
func seed(tb testing.TB, s agent.Store, taskID string, n, size int) {
	tb.Helper()
	ctx := context.Background()
	for n > 0 {
		t, _, err := s.LoadTask(ctx, taskID)
		if err != nil {
			tb.Fatal(err)
		}
		batch := min(n, 50)
		var items []agent.Item
		for i := 0; i < batch; i++ {
			role := agent.RoleUser
			if (int(t.NextSeq)+i)%2 == 0 {
				role = agent.RoleAssistant
			}
			items = append(items, agent.Item{Seq: t.NextSeq + int64(i), RequestID: uuid.NewString(), Role: role,
				CreatedAt: time.Now(), Content: []agent.Block{agent.TextBlock(strings.Repeat("w ", size/2))}})
		}
		next := t.Clone()
		next.NextSeq += int64(batch)
		next.Version++
		next.WriteID = uuid.NewString()
		if err := s.Write(ctx, &agent.Write{Task: next, PrevVersion: t.Version, Items: items}); err != nil {
			tb.Fatal(err)
		}
		n -= batch
	}
}

func TestCallsPerTurn(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testCallsPerTurn(t, false) })
	// With webhooks and a waiter, the outbox items and the token ride in
	// the transactions the turn makes anyway (docs/architecture.md): not a call more.
	t.Run("notified", func(t *testing.T) { testCallsPerTurn(t, true) })
}

func testCallsPerTurn(t *testing.T, notified bool) {
	env, c := dynamoEnv(t)
	if notified {
		ag, _ := env.E.Agents.Get("acc")
		ag.Notifications = []agent.Notification{{URL: "https://hooks.example.com/h", Events: agent.NotificationEvents, Secret: []byte("0123456789abcdef")}}
	}
	count := func() map[string]int {
		calls, _ := c.Calls()
		c.Reset()
		return calls
	}
	c.Reset()
	env.Model.Add(agenttest.Say("hello"))
	var first *agent.RequestResult
	if notified {
		run, err := env.E.StartInvoke(context.Background(), agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "hi"}},
			Waiter: &agent.Waiter{Kind: agent.WaiterTaskToken, ID: "token"}})
		if err != nil {
			t.Fatal(err)
		}
		first = run.Execute(context.Background(), nil)
	} else {
		first, _ = env.Invoke(t, "", "hi")
	}
	if diff := cmp.Diff(map[string]int{"TransactWriteItems": 2}, count()); diff != "" {
		t.Errorf("new task (-want +got):\n%s", diff)
	}
	if notified {
		if items, err := env.Store.ListOutbox(context.Background(), time.Now().Add(time.Hour), 0); err != nil || len(items) != 2 {
			t.Errorf("outbox after the first turn: %+v %v (want the webhook and the token's answer)", items, err)
		}
		count()
	}
	followOn := map[string]int{"Query": 1, "TransactWriteItems": 2}
	env.Model.Add(agenttest.Say("again"))
	env.Invoke(t, first.TaskID, "again")
	if diff := cmp.Diff(followOn, count()); diff != "" {
		t.Errorf("follow-on (-want +got):\n%s", diff)
	}
	// One tool iteration adds one write.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("s1", "safe", "x")), agenttest.Say("done"))
	env.Invoke(t, first.TaskID, "use a tool")
	if diff := cmp.Diff(map[string]int{"Query": 1, "TransactWriteItems": 3}, count()); diff != "" {
		t.Errorf("follow-on with a tool (-want +got):\n%s", diff)
	}
	// Flat in history length: 600 more entries (about 300 KB).
	seed(t, env.Store, first.TaskID, 600, 500)
	c.Reset()
	env.Model.Add(agenttest.Say("still"))
	env.Invoke(t, first.TaskID, "long history")
	if diff := cmp.Diff(followOn, count()); diff != "" {
		t.Errorf("follow-on over a long history (-want +got):\n%s", diff)
	}
	// A resume: read, claim with the decision, commit.
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "y")))
	paused, _ := env.Invoke(t, first.TaskID, "pause")
	if paused.Status != agent.StatusPaused {
		t.Fatalf("%+v", paused)
	}
	count()
	env.Model.Add(agenttest.Say("resumed"))
	if out, _, err := env.Resume(paused, "alice", enginetest.Approve()); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("%+v %v", out, err)
	}
	if diff := cmp.Diff(followOn, count()); diff != "" {
		t.Errorf("resume (-want +got):\n%s", diff)
	}
	// An answered round costs what a decided round costs: a question, and
	// an MCP elicitation (whose call runs again with the answer).
	for _, in := range []struct {
		name   string
		call   agent.Block
		answer string
	}{
		{"question", agenttest.Use("q1", "ask_user", `{"question":"Go?"}`), `"yes"`},
		{"elicitation", agenttest.Use("b1", "book_table", `{"day":"monday"}`), `{"action":"accept","content":{"size":2}}`},
	} {
		env.Model.Add(agenttest.CallTools(agent.StopToolUse, in.call))
		paused, _ := env.Invoke(t, first.TaskID, "ask")
		if paused.Status != agent.StatusPaused {
			t.Fatalf("%s: %+v", in.name, paused)
		}
		count()
		env.Model.Add(agenttest.Say("answered"))
		body := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: in.call.ID, Action: agent.ActionAnswer, Result: json.RawMessage(in.answer)}}}
		if out, _, err := env.Resume(paused, "alice", body); err != nil || out.Status != agent.StatusCompleted {
			t.Fatalf("%s: %+v %v", in.name, out, err)
		}
		if diff := cmp.Diff(followOn, count()); diff != "" {
			t.Errorf("an answered %s (-want +got):\n%s", in.name, diff)
		}
	}
	// A round whose inputs pass META's 64 KiB (five MCP calls with a 15
	// KiB state each): their JINP# items ride in the pause's write and the
	// resume's one read, and the claim deletes them — not a call more.
	env.Booker.Pad = "|" + strings.Repeat("s", 15<<10)
	var uses []agent.Block
	var answers []agent.DecisionInput
	for i := range 5 {
		id := fmt.Sprintf("big%d", i)
		uses = append(uses, agenttest.Use(id, "book_table", `{"day":"monday"}`))
		answers = append(answers, agent.DecisionInput{ToolCallID: id, Action: agent.ActionAnswer, Result: json.RawMessage(`{"action":"accept","content":{"size":2}}`)})
	}
	count()
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, uses...))
	big, _ := env.Invoke(t, first.TaskID, "ask five")
	if big.Status != agent.StatusPaused {
		t.Fatalf("five big inputs: %+v", big)
	}
	t.Logf("a pause on five big inputs: %v", count())
	env.Model.Add(agenttest.Say("answered"))
	if out, _, err := env.Resume(big, "alice", agent.ResumeRequest{Decisions: answers}); err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("five big inputs: %+v %v", out, err)
	}
	if diff := cmp.Diff(followOn, count()); diff != "" {
		t.Errorf("five answered inputs beyond META (-want +got):\n%s", diff)
	}
}

func TestCallsPastOneMegabyte(t *testing.T) {
	env, c := dynamoEnv(t)
	env.Model.Add(agenttest.Say("hello"))
	first, _ := env.Invoke(t, "", "hi")
	seed(t, env.Store, first.TaskID, 300, 8000) // about 2.4 MB
	c.Reset()
	env.Model.Add(agenttest.Say("big"))
	env.Invoke(t, first.TaskID, "big history")
	calls, _ := c.Calls()
	if calls["TransactWriteItems"] != 2 || calls["Query"] < 3 {
		t.Errorf("calls = %v: want 2 writes and a page of reading per MB", calls)
	}
	t.Logf("a 2.4 MB history: %v", fmt.Sprint(calls))
}

// TestRenewalWritesNoIndex: a lease renewal changes version and lease_until
// alone, which no index projects (GSI1 projects the list fields, GSI4 only
// its keys, which a renewal leaves as they are): it costs no index write.
// The claim and the commit write GSI4 (the request enters and leaves the
// reaper's index) and GSI1 (the task's status).
func TestRenewalWritesNoIndex(t *testing.T) {
	base := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), base, table); err != nil {
		t.Fatal(err)
	}
	c := perf.NewCounter()
	store := dynamo.New(c.IndexClient(base), table)
	env := enginetest.New(t, store)
	env.E.Now = nil
	ctx := context.Background()
	run, err := env.E.StartInvoke(ctx, agent.InvokeInput{Agent: "acc", UserID: "alice", Items: []agent.InputItem{{Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	claim := c.IndexWrites()
	if claim["GSI4"] == 0 || claim["GSI1"] == 0 {
		t.Errorf("the claim's index writes: %v (want GSI1 and GSI4)", claim)
	}
	for i := 0; i < 3; i++ {
		c.Reset()
		now := time.Now()
		if _, err := store.RenewLease(ctx, run.TaskID(), run.Task().Active.ClaimToken, now.Add(agent.LeaseDuration), now); err != nil {
			t.Fatal(err)
		}
		if got := c.IndexWrites(); len(got) != 0 {
			t.Errorf("renewal %d wrote indexes: %v", i+1, got)
		}
	}
	c.Reset()
	env.Model.Add(agenttest.Say("done"))
	if res := run.Execute(ctx, nil); res.Status != agent.StatusCompleted {
		t.Fatalf("%+v", res)
	}
	t.Logf("index write units of a new task's commit: %v", c.IndexWrites())
	if c.IndexWrites()["GSI4"] == 0 {
		t.Errorf("the commit did not take the request out of the reaper's index")
	}
}

// TestCallsPerRecording: an approval short of its call's quorum costs the
// read and one write, its events in that write; the approval that settles
// the round costs what any decision costs (docs/guide/budgets.md).
func TestCallsPerRecording(t *testing.T) {
	env, c := dynamoEnv(t)
	ag, _ := env.E.Agents.Get("acc")
	for i := range ag.Tools {
		if ag.Tools[i].Tool.Spec().Name == "guarded" {
			ag.Tools[i].Policy.Approvers = &agent.ApproverPolicy{Approvers: []string{agent.GroupPrincipal("sre")}, Quorum: 2, FourEyes: true}
		}
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g1", "guarded", "y")))
	paused, _ := env.Invoke(t, "", "pause")
	if paused.Status != agent.StatusPaused {
		t.Fatalf("%+v", paused)
	}
	approve := func(user string) (*agent.RequestResult, *enginetest.Recorder) {
		t.Helper()
		run, err := env.E.StartResume(context.Background(), agent.ResumeInput{Agent: "acc", UserID: user, Groups: []string{"sre"},
			TaskID: paused.TaskID, RequestID: paused.RequestID, Body: enginetest.Approve()})
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		rec := &enginetest.Recorder{}
		return run.Execute(context.Background(), rec), rec
	}
	c.Reset()
	out, rec := approve("bob")
	calls, _ := c.Calls()
	if diff := cmp.Diff(map[string]int{"Query": 1, "TransactWriteItems": 1}, calls); diff != "" || out.Status != agent.StatusPaused {
		t.Errorf("a recorded approval: %s (-want +got):\n%s", out.Status, diff)
	}
	// Its events are in the log: a reader replays them.
	evs, err := env.Store.ListEvents(context.Background(), paused.TaskID, paused.RequestID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
	}
	if got, want := names[len(names)-2:], []string{"approval_recorded", "request_complete"}; !slices.Equal(got, want) || !slices.Equal(rec.Names(), want) {
		t.Errorf("the log ends %v, the answer streamed %v; want %v", got, rec.Names(), want)
	}
	c.Reset()
	env.Model.Add(agenttest.Say("done"))
	if out, _ := approve("dave"); out.Status != agent.StatusCompleted {
		t.Fatalf("dave: %+v", out)
	}
	calls, _ = c.Calls()
	if diff := cmp.Diff(map[string]int{"Query": 1, "TransactWriteItems": 2}, calls); diff != "" {
		t.Errorf("the approval that settles the round (-want +got):\n%s", diff)
	}
}
