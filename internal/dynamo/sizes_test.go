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
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "TASK#" + taskID}, "SK": &types.AttributeValueMemberS{Value: "META"}}})
	if err != nil {
		tb.Fatal(err)
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

// META does not grow with tool inputs (DESIGN §4 Sizes): a turn of eight
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
	for r := 1; r <= 50; r++ {
		env.Model.Add(agenttest.CallTools(agent.StopToolUse, enginetest.Call(fmt.Sprintf("g%d", r), "guarded", fmt.Sprintf("round %d", r+1))))
		body := enginetest.Approve()
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
}
