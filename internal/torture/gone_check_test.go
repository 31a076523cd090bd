package torture

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	tGone = "00000000-0000-7000-8000-00000000a009"
	rGone = "00000000-0000-7000-8000-00000000b009"
)

// gone is a history of gmid whose remote went away for good at 2 s: its
// call's message reached the relay at 2.5 s (read, the connection closed),
// the call was closed outcome_unknown at 6 s and its remote-cancel sent the
// message again without streaming at 6.2 s.
func gone() Input {
	msg := `/call fx_peek {"tag":"t7","v":"vt7"}`
	task := &Task{Proc: ProcA, TaskID: tGone, Agent: GoneAgent, Status: "Completed",
		Items: []Item{
			{Seq: 1, RequestID: rGone, Role: "user", Content: []Block{{Type: "text", Text: "/call leaf …"}}},
			{Seq: 2, RequestID: rGone, Role: "assistant", Content: []Block{useAgent("k1", "leaf", msg)}},
			{Seq: 3, RequestID: rGone, Role: "tool", Content: []Block{result("k1", "error",
				"outcome_unknown: the remote agent did not answer; it may have received the message")}},
		},
		Requests: []Request{{RequestID: rGone, Kind: "invoke", Status: "Completed", CreatedAt: at(2.4), UpdatedAt: at(6.1)}},
	}
	return Input{
		Tasks: []*Task{task},
		Ops: []Op{{ID: 1, Kind: OpInvoke, Proc: ProcA, Method: "POST", Path: "/agents/" + GoneAgent + "/invoke", Start: at(2.4), End: at(6.1),
			Status: 200, Resp: rr(rGone, tGone, "Completed", 0)}},
		Deliveries: []Delivery{hook(ProcA, "msg_9", "request.completed", rGone, 0, 6.2)},
		Gone: &Gone{At: at(2), Bound: goneBound, Reads: []GoneRead{
			{At: at(2.5), Method: "SendStreamingMessage", Message: msg},
			{At: at(6.2), Method: "SendMessage", Message: msg},
		}},
	}
}

// TestCheckRemoteGone: each check of a remote gone for good fires on its
// breach, and none on the clean history.
func TestCheckRemoteGone(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(in *Input)
		want   map[int]int
	}{
		{name: "clean: outcome_unknown, the remote-cancel sent, ended in time", mutate: func(*Input) {}, want: map[int]int{}},
		{name: "the relay never went away", mutate: func(in *Input) { in.Gone = &Gone{} },
			want: map[int]int{}},
		{name: "the call that may have landed says not run", want: map[int]int{4: 1}, mutate: func(in *Input) {
			in.Tasks[0].Items[2].Content[0] = result("k1", "error", "not run: the agent leaf could not be reached")
		}},
		{name: "no remote-cancel attempted", want: map[int]int{6: 1}, mutate: func(in *Input) {
			in.Gone.Reads = in.Gone.Reads[:1]
		}},
		{name: "the caller ended beyond the bound", want: map[int]int{6: 1}, mutate: func(in *Input) {
			in.Tasks[0].Requests[0].UpdatedAt = at(2).Add(goneBound + 1e9)
		}},
		{name: "the caller still Running", want: map[int]int{6: 2}, mutate: func(in *Input) {
			in.Tasks[0].Status, in.Tasks[0].Requests[0].Status = "Running", "Running"
			in.Tasks[0].Items = in.Tasks[0].Items[:2]
			in.Ops[0].Resp = rr(rGone, tGone, "Running", 0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := gone()
			tt.mutate(&in)
			res := Check(in)
			if diff := cmp.Diff(tt.want, res.ByInvariant()); diff != "" {
				t.Errorf("violations by invariant (-want +got):\n%s\n%+v", diff, res.Violations)
			}
		})
	}
}
