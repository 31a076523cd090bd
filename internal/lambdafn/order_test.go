package lambdafn_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/enginetest"
	"github.com/hitch-agents/hitch/internal/lambdafn"
	"github.com/hitch-agents/hitch/internal/memstore"
)

// withOther adds the agent "other" to an engine's agents.
type withOther struct{ agent.Agents }

func (o withOther) Get(name string) (*agent.Agent, bool) {
	if name == "other" {
		return &agent.Agent{Name: "other", Version: "1", ModelID: "m", MaxIterations: 2}, true
	}
	return o.Agents.Get(name)
}

// A direct invocation checks in the order of docs/api.md "Errors", like the
// HTTP route it stands for (payload → agent → task → the task's agent →
// owner → state); the user_id the payload must name comes first, as the
// authorizer does over HTTP. Each case has two faults or more and expects
// the first; nothing changes.
func TestDirectOrder(t *testing.T) {
	en := enginetest.New(t, memstore.New())
	en.E.Now = nil
	en.E.Agents = withOther{en.E.Agents}
	direct := lambdafn.Direct(en.E)
	paused, _ := en.Pause(t) // alice's
	P, S := paused.TaskID, paused.SessionID
	unknown := agent.NewID()
	follow := func(user, ag, tid string) string {
		return `{"agent":"` + ag + `","user_id":"` + user + `","task_id":"` + tid + `","items":[{"content":"x"}]}`
	}
	tests := []struct {
		name, payload, errorType string
	}{
		{"not JSON, no user", `{"agent":"nobody",`, "Hitch.invalid_json"},
		{"unknown field, unknown agent", `{"agent":"nobody","user_id":"alice","items":[{"content":"x"}],"op2":1}`, "Hitch.invalid_json"},
		{"no user, unknown agent, no items", `{"agent":"nobody","items":[]}`, "Hitch.unauthenticated"},
		{"no items, unknown agent", `{"agent":"nobody","user_id":"alice","items":[]}`, "Hitch.invalid_items"},
		{"metadata over 8 KiB, another user's task", `{"agent":"acc","user_id":"mallory","task_id":"` + P + `","items":[{"content":"x"}],"metadata":{"k":"` + strings.Repeat("v", 9<<10) + `"}}`, "Hitch.invalid_metadata"},
		{"bad task id, unknown agent", follow("alice", "nobody", "t-1"), "Hitch.invalid_id"},
		{"bad idempotency key, unknown agent", `{"agent":"nobody","user_id":"alice","items":[{"content":"x"}],"idempotency_key":"\u00e9"}`, "Hitch.invalid_idempotency_key"},
		{"unknown agent, unknown task", follow("alice", "nobody", unknown), "Hitch.agent_not_found"},
		{"unknown task, another user", follow("mallory", "acc", unknown), "Hitch.task_not_found"},
		{"another agent's task, another user", follow("mallory", "other", P), "Hitch.task_not_found"},
		{"another user, task paused", follow("mallory", "acc", P), "Hitch.not_owner"},
		{"another user, session mismatch", `{"agent":"acc","user_id":"mallory","task_id":"` + P + `","session_id":"` + unknown + `","items":[{"content":"x"}]}`, "Hitch.not_owner"},
		{"another user's session", `{"agent":"acc","user_id":"mallory","session_id":"` + S + `","items":[{"content":"x"}]}`, "Hitch.not_owner"},
		{"session mismatch, task paused", `{"agent":"acc","user_id":"alice","task_id":"` + P + `","session_id":"` + unknown + `","items":[{"content":"x"}]}`, "Hitch.session_mismatch"},
		{"task paused", follow("alice", "acc", P), "Hitch.task_paused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, items, err := en.Store.LoadTask(t.Context(), P)
			if err != nil {
				t.Fatal(err)
			}
			_, err = call(t, direct, tc.payload)
			wantRefusal(t, err, tc.errorType)
			after, items2, err := en.Store.LoadTask(t.Context(), P)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]any{before, items}, []any{after, items2}); diff != "" {
				t.Errorf("a refusal changed the paused task (-before +after):\n%s", diff)
			}
		})
	}
}
