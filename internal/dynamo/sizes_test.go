package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/ddblocal"
	"github.com/hitch-agents/hitch/internal/dynamo"
	"github.com/hitch-agents/hitch/internal/enginetest"
)

// metaSize is the size of a task's META as stored.
func metaSize(tb testing.TB, c *dynamodb.Client, table, taskID string) int {
	tb.Helper()
	return itemSize(tb, c, table, taskID, "META")
}

// reqSize is the size of a finished request's record (REQ#<rid>).
func reqSize(tb testing.TB, c *dynamodb.Client, table, taskID, rid string) int {
	tb.Helper()
	return itemSize(tb, c, table, taskID, "REQ#"+rid)
}

func itemSize(tb testing.TB, c *dynamodb.Client, table, taskID, sk string) int {
	tb.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "TASK#" + taskID}, "SK": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		tb.Fatal(err)
	}
	if len(out.Item) == 0 {
		tb.Fatalf("no item %s of task %s", sk, taskID)
	}
	n := 0
	for k, v := range out.Item {
		n += len(k)
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			n += len(s.Value)
		}
	}
	return n
}

// META does not grow with tool inputs (docs/architecture.md, The table): a turn of eight
// 50 KB calls pauses, is approved and completes, after 50 earlier rounds of
// the same request, with META far below DynamoDB's 400 KB item limit (which
// DynamoDB Local does not enforce, hence the measure).
func TestBigPauseAfterFiftyRounds(t *testing.T) {
	client := ddblocal.Client(t)
	table := "hitch-" + uuid.NewString()
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	env := enginetest.New(t, dynamo.New(client, table))
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call("g0", "guarded", "round 1")))
	res, _ := env.Invoke(t, "", "go")
	// Each of the 50 rounds is decided with an edit of 10 KB: its decision
	// holds the edited and the original input, 500 KB in all, which no
	// single item may hold (docs/architecture.md, The table: decided rounds are DEC# items).
	edited := fmt.Sprintf(`{"text":%q}`, strings.Repeat("e", 10_000))
	for r := 1; r <= 50; r++ {
		env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call(fmt.Sprintf("g%d", r), "guarded", fmt.Sprintf("round %d", r+1))))
		body := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: fmt.Sprintf("g%d", r-1), Action: agent.ActionEdit, Input: json.RawMessage(edited)}}}
		body.Round = &r
		out, _, err := env.Resume(res, "alice", body)
		if err != nil || out.Status != agent.StatusPaused {
			t.Fatalf("round %d: %+v %v", r, out, err)
		}
	}
	big := strings.Repeat("x", 50_000)
	var calls []agent.Block
	for i := range 8 {
		calls = append(calls, enginetest.Call(fmt.Sprintf("big%d", i), "guarded", big))
	}
	env.Model.Add(agenttest.CallTools(agent.StopToolUse, calls...))
	round := 51
	body := enginetest.Approve()
	body.Round = &round
	out, _, err := env.Resume(res, "alice", body)
	if err != nil || out.Status != agent.StatusPaused || len(out.PendingApprovals) != 8 {
		t.Fatalf("the big turn: %+v %v", out, err)
	}
	n := metaSize(t, client, table, res.TaskID)
	t.Logf("META: %d bytes with eight 50 KB calls pending in round 52", n)
	if n > 64<<10 {
		t.Errorf("META holds %d bytes with eight 50 KB calls pending after 51 rounds; it must not grow with inputs", n)
	}
	// The pending calls show their inputs, read from their history entry.
	v, err := env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{Limit: 5})
	if err != nil || len(v.PendingApprovals) != 8 {
		t.Fatalf("GET task: %+v %v", v, err)
	}
	raw, _ := json.Marshal(v.PendingApprovals[0].Input)
	var in struct{ Text string }
	if err := json.Unmarshal(raw, &in); err != nil || in.Text != big {
		t.Errorf("a pending call's input in GET task is %.80s…", raw)
	}
	env.Model.Add(agenttest.Say("done"))
	round = 52
	out, _, err = env.Resume(res, "alice", body)
	if err != nil || out.Status != agent.StatusCompleted {
		t.Fatalf("the approval of the big turn: %+v %v", out, err)
	}
	if n := len(env.Guarded.Runs()); n != 59 {
		t.Errorf("the guarded tool ran %d times, want 51 + 8", n)
	}
	// GET task shows every round's decision, in order, the edits whole.
	v, err = env.E.GetTask(context.Background(), "acc", "alice", res.TaskID, agent.ViewOptions{Limit: 5})
	if err != nil || len(v.Requests) != 1 {
		t.Fatalf("GET task: %+v %v", v, err)
	}
	ds := v.Requests[0].Decisions
	if len(ds) != 52 {
		t.Fatalf("GET task shows %d decisions, want 52", len(ds))
	}
	for i, d := range ds {
		if d.Round != i+1 {
			t.Errorf("decision %d is of round %d", i, d.Round)
		}
	}
	if got := string(ds[49].Calls[0].Input); got != edited {
		t.Errorf("round 50's edited input is %.60s…", got)
	}
	// A retry of round 3's decision, long after, is checked against DEC#3:
	// the request has moved past round 3, so the same decision answers
	// that round's leg (it paused again, in round 4), from the event log.
	r3 := 3
	retry := agent.ResumeRequest{Decisions: []agent.DecisionInput{{ToolCallID: "g2", Action: agent.ActionEdit, Input: json.RawMessage(edited)}}, Round: &r3}
	if out, _, err := env.Resume(res, "alice", retry); err != nil || out.Status != agent.StatusPaused || out.Round != 4 {
		t.Errorf("a retry of round 3's decision: %+v %v, want round 3's leg (Paused in round 4)", out, err)
	}
	other := agent.ResumeRequest{Action: agent.ActionReject, Round: &r3}
	if _, _, err := env.Resume(res, "alice", other); enginetest.Code(err) != agent.CodeNotPaused {
		t.Errorf("another decision of round 3: %v, want %s", err, agent.CodeNotPaused)
	}
	if n := reqSize(t, client, table, res.TaskID, res.RequestID); n > 64<<10 {
		t.Errorf("the request's record holds %d bytes after 52 rounds; it must not grow with them", n)
	}
}
