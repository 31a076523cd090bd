package enginetest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/agent/agenttest"
	"github.com/hitch-agents/hitch/internal/httpapi"
	"github.com/hitch-agents/hitch/internal/httpapi/contract"
)

// The approvers' checks of docs/api.md, "Approvers", black-box over HTTP
// with dev auth ("Bearer bob;groups=sre"). Alice, of sre, owns each task;
// bob, dave, erin, frank and gina are of sre; carol of no group. The agent
// ops has, each decided by sre with four eyes: wipe (one approval), drop
// (two), purge (three); and guarded, the default policy.

const (
	alice = "alice;groups=sre"
	bob   = "bob;groups=sre"
	dave  = "dave;groups=sre"
	erin  = "erin;groups=sre"
	carol = "carol"
)

// opsEnv serves the engine with the ops agent beside acc.
type opsEnv struct {
	*Env
	srv               *httptest.Server
	wipe, drop, purge *Tool
}

func newOps(t *testing.T, env *Env) *opsEnv {
	t.Helper()
	o := &opsEnv{Env: env, wipe: &Tool{Name: "wipe"}, drop: &Tool{Name: "drop"}, purge: &Tool{Name: "purge"}}
	sre := func(q int) agent.ToolPolicy {
		return agent.ToolPolicy{RequiresApproval: true, ApprovalTTL: time.Hour,
			Approvers: &agent.ApproverPolicy{Approvers: []string{agent.GroupPrincipal("sre")}, Quorum: q, FourEyes: true}}
	}
	ops := &agent.Agent{Name: "ops", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
		{Tool: o.wipe, Policy: sre(1)}, {Tool: o.drop, Policy: sre(2)}, {Tool: o.purge, Policy: sre(3)},
		{Tool: env.Guarded, Policy: agent.ToolPolicy{RequiresApproval: true, ApprovalTTL: time.Hour}},
	}}
	desk := &agent.Agent{Name: "desk", Version: "1", ModelID: "m", MaxIterations: 6, Tools: []agent.BoundTool{
		{Tool: &agent.AgentTool{Agent: "ops", Description: "runs operations"}}}}
	acc, _ := env.E.Agents.Get("acc")
	env.E.Agents = agentSet{"acc": acc, "ops": ops, "desk": desk}
	api := &httpapi.Server{Engine: env.E, Auth: httpapi.DevAuth, Log: slog.New(slog.DiscardHandler)}
	o.srv = httptest.NewServer(contract.Check(t, api.Handler()))
	t.Cleanup(o.srv.Close)
	return o
}

// httpAnswer is an HTTP answer: its status and JSON body.
type httpAnswer struct {
	Status int
	Body   map[string]any
	raw    string
}

func (a httpAnswer) code() string {
	if e, ok := a.Body["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

func (a httpAnswer) String() string { return fmt.Sprintf("%d %s", a.Status, a.raw) }

func (o *opsEnv) do(t testing.TB, method, path, user, body string, hdr ...string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(method, o.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+user)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := httpAnswer{Status: resp.StatusCode, raw: string(b)}
	_ = json.Unmarshal(b, &a.Body)
	return a
}

// pauseOn has alice ask ops for calls of tools (each named by its tool,
// id "c-<tool>"), and returns the paused httpAnswer's resume URL.
func (o *opsEnv) pauseOn(t *testing.T, tools ...string) (string, httpAnswer) {
	t.Helper()
	var calls []agent.Block
	for _, name := range tools {
		calls = append(calls, Call("c-"+name, name, name+" prod"))
	}
	o.Model.Add(agenttest.CallTools(agent.StopToolUse, calls...))
	a := o.do(t, "POST", "/agents/ops/invoke", alice, `{"items":[{"content":"clean up"}]}`)
	if a.Status != 200 || a.Body["status"] != "Paused" {
		t.Fatalf("invoke: %v", a)
	}
	return a.Body["resume_url"].(string), a
}

// status is an httpAnswer's status and what it says of its first pending call:
// its approvals in and needed.
func status(a httpAnswer) string {
	s := fmt.Sprintf("%d %v", a.Status, a.Body["status"])
	if c := a.code(); c != "" {
		s = fmt.Sprintf("%d %s", a.Status, c)
	}
	if ps, _ := a.Body["pending_approvals"].([]any); len(ps) > 0 {
		p := ps[0].(map[string]any)
		as, _ := p["approvals"].([]any)
		s += fmt.Sprintf(" %d/%v", len(as), p["needed"])
	}
	return s
}

// testFourEyes: the requester may reject but never approve a four-eyes
// call; another of the group approves it, and the record names them.
func testFourEyes(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, paused := o.pauseOn(t, "wipe")
	p := paused.Body["pending_approvals"].([]any)[0].(map[string]any)
	shown := map[string]any{"approvers": p["approvers"], "needed": p["needed"], "four_eyes": p["four_eyes"]}
	if diff := cmp.Diff(map[string]any{"approvers": []any{"group:sre"}, "needed": 1.0, "four_eyes": true}, shown); diff != "" {
		t.Errorf("the pending call's policy (-want +got):\n%s", diff)
	}
	if a := o.do(t, "POST", url, alice, `{"action":"approve"}`); status(a) != "403 not_approver" {
		t.Errorf("alice approves her own four-eyes call: %v, want 403 not_approver", a)
	}
	if a := o.do(t, "POST", url, alice, `{"decisions":[{"tool_call_id":"c-wipe","action":"approve"}]}`); status(a) != "403 not_approver" {
		t.Errorf("alice approves by decisions: %v, want 403 not_approver", a)
	}
	o.Model.Add(agenttest.Say("wiped"))
	if a := o.do(t, "POST", url, bob, `{"action":"approve"}`); status(a) != "200 Completed" {
		t.Fatalf("bob approves: %v", a)
	}
	if diff := cmp.Diff([]string{"wipe prod"}, o.wipe.Runs()); diff != "" {
		t.Errorf("wipe's runs (-want +got):\n%s", diff)
	}
	task := o.do(t, "GET", strings.TrimSuffix(url[:strings.Index(url, "/requests/")], "/"), alice, "")
	reqs := task.Body["requests"].([]any)
	dec := reqs[0].(map[string]any)["decisions"].([]any)[0].(map[string]any)
	call := dec["calls"].([]any)[0].(map[string]any)
	ap := call["approvals"].([]any)[0].(map[string]any)
	got := map[string]any{"approver": dec["approver"], "by": ap["by"], "principal": ap["principal"], "via": ap["via"]}
	if diff := cmp.Diff(map[string]any{"approver": "bob", "by": "bob", "principal": "group:sre", "via": "http"}, got); diff != "" {
		t.Errorf("the record (-want +got):\n%s", diff)
	}
	// Alice may reject: elsewhere, her rejection settles the call.
	url2, _ := o.pauseOn(t, "wipe")
	o.Model.Add(agenttest.Say("not wiped"))
	if a := o.do(t, "POST", url2, alice, `{"action":"reject","reason":"no"}`); status(a) != "200 Completed" {
		t.Errorf("alice rejects: %v", a)
	}
	if n := len(o.wipe.Runs()); n != 1 {
		t.Errorf("wipe ran %d times, want once", n)
	}
}

// testStrangers: one eligible for no call of a task is refused as today.
func testStrangers(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, _ := o.pauseOn(t, "wipe")
	taskURL := url[:strings.Index(url, "/requests/")]
	reqURL := strings.TrimSuffix(url, "/resume")
	for _, c := range []struct{ method, path, body, want string }{
		{"POST", url, `{"action":"approve"}`, "401 not_owner"},
		{"POST", url, `{"action":"reject"}`, "401 not_owner"},
		{"GET", taskURL, "", "401 not_owner"},
		{"GET", reqURL + "/events", "", "401 not_owner"},
		{"POST", taskURL + "/requests/00000000-0000-4000-8000-000000000000/resume", `{"action":"approve"}`, "404 request_not_found"},
	} {
		if a := o.do(t, c.method, c.path, carol, c.body); status(a) != c.want {
			t.Errorf("carol %s %s: %v, want %s", c.method, c.path, a, c.want)
		}
	}
	// A party may decide, not run the task: cancel, a follow-on, a delete
	// stay the owner's.
	for _, c := range []struct{ method, path, body string }{
		{"POST", taskURL + "/cancel", `{}`},
		{"POST", "/agents/ops/invoke", `{"task_id":"` + taskURL[strings.LastIndex(taskURL, "/")+1:] + `","items":[{"content":"more"}]}`},
		{"DELETE", taskURL, ""},
	} {
		if a := o.do(t, c.method, c.path, bob, c.body); status(a) != "401 not_owner" {
			t.Errorf("bob %s %s: %v, want 401 not_owner", c.method, c.path, a)
		}
	}
	if n := len(o.wipe.Runs()); n != 0 {
		t.Errorf("wipe ran %d times, want none", n)
	}
}

// testQuorumTwo: an approval short of the quorum is recorded and answered
// Paused; the same person again counts once; the next person's settles it.
func testQuorumTwo(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, _ := o.pauseOn(t, "drop")
	a := o.do(t, "POST", url, bob, `{"action":"approve"}`, "Accept", "text/event-stream")
	if a.Status != 200 || !strings.Contains(a.raw, "event: approval_recorded") || !strings.Contains(a.raw, "event: request_complete") {
		t.Fatalf("bob's approval: %d %s", a.Status, a.raw)
	}
	for _, who := range []string{bob, bob} {
		if a := o.do(t, "POST", url, who, `{"action":"approve"}`); status(a) != "200 Paused 1/2" {
			t.Errorf("%s again: %v, want 200 Paused 1/2", who, a)
		}
	}
	if a := o.do(t, "POST", url, bob, `{"action":"approve"}`, "Accept", "text/event-stream"); !strings.Contains(a.raw, "event: request_complete") {
		t.Errorf("bob again, streamed: %d %q, want a stream ending with request_complete", a.Status, a.raw)
	}
	if n := len(o.drop.Runs()); n != 0 {
		t.Fatalf("drop ran at 1 of 2")
	}
	// Bob sees what he decides, nothing more: the decision view.
	taskURL := url[:strings.Index(url, "/requests/")]
	reqID := strings.TrimSuffix(url[strings.Index(url, "/requests/")+len("/requests/"):], "/resume")
	v := o.do(t, "GET", taskURL, bob, "")
	if v.Status != 200 || v.Body["view"] != "approver" {
		t.Fatalf("bob's GET while he may decide: %v", v)
	}
	var others []any
	for _, r := range v.Body["requests"].([]any) {
		if id := r.(map[string]any)["request_id"]; id != reqID {
			others = append(others, id)
		}
	}
	for _, it := range v.Body["items"].([]any) {
		if id := it.(map[string]any)["request_id"]; id != reqID {
			others = append(others, id)
		}
	}
	if len(others) != 0 || len(v.Body["trusted"].([]any)) != 0 {
		t.Errorf("the decision view shows other requests %v or trust %v", others, v.Body["trusted"])
	}
	if a := o.do(t, "GET", taskURL, alice, ""); a.Status != 200 || a.Body["view"] != nil {
		t.Errorf("alice's GET: %v, want the owner's view", a)
	}
	o.Model.Add(agenttest.Say("dropped"))
	if a := o.do(t, "POST", url, dave, `{"action":"approve"}`); status(a) != "200 Completed" {
		t.Fatalf("dave's approval: %v", a)
	}
	if a := o.do(t, "POST", url, bob, `{"action":"approve"}`); status(a) != "200 Completed" {
		t.Errorf("bob's approval after the quorum: %v, want the outcome", a)
	}
	if diff := cmp.Diff([]string{"drop prod"}, o.drop.Runs()); diff != "" {
		t.Errorf("drop's runs (-want +got):\n%s", diff)
	}
	if a := o.do(t, "GET", taskURL, bob, ""); status(a) != "401 not_owner" {
		t.Errorf("bob's GET once nothing waits on him: %v, want 401 not_owner", a)
	}
}

// testQuorumRace: fifty concurrent approvals by five people at quorum 3
// all httpAnswer 200, and the call runs once.
func testQuorumRace(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, _ := o.pauseOn(t, "purge")
	o.Model.Add(agenttest.Say("purged"))
	people := []string{bob, dave, erin, "frank;groups=sre", "gina;groups=sre"}
	var wg sync.WaitGroup
	got := make([]httpAnswer, 50)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = o.do(t, "POST", url, people[i%len(people)], `{"action":"approve"}`)
		}()
	}
	wg.Wait()
	for i, a := range got {
		if a.Status != 200 {
			t.Errorf("approval %d: %v", i, a)
		}
	}
	if diff := cmp.Diff([]string{"purge prod"}, o.purge.Runs()); diff != "" {
		t.Errorf("purge's runs (-want +got):\n%s", diff)
	}
	task := o.do(t, "GET", url[:strings.Index(url, "/requests/")], alice, "")
	dec := task.Body["requests"].([]any)[0].(map[string]any)["decisions"].([]any)[0].(map[string]any)
	if as := dec["calls"].([]any)[0].(map[string]any)["approvals"].([]any); len(as) != 3 {
		t.Errorf("approvals recorded: %d, want 3 (%v)", len(as), as)
	}
}

// testQuorumReject: one rejection settles a call whatever its quorum; an
// approval after it conflicts.
func testQuorumReject(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, _ := o.pauseOn(t, "drop")
	if a := o.do(t, "POST", url, bob, `{"action":"approve"}`); status(a) != "200 Paused 1/2" {
		t.Fatalf("bob: %v", a)
	}
	o.Model.Add(agenttest.Say("kept"))
	if a := o.do(t, "POST", url, dave, `{"action":"reject","reason":"not on a Friday"}`); status(a) != "200 Completed" {
		t.Fatalf("dave rejects: %v", a)
	}
	if a := o.do(t, "POST", url, erin, `{"action":"approve"}`); status(a) != "409 decision_conflict" {
		t.Errorf("erin approves after the rejection: %v, want 409 decision_conflict", a)
	}
	if n := len(o.drop.Runs()); n != 0 {
		t.Errorf("drop ran %d times after a rejection", n)
	}
	if !strings.Contains(fmt.Sprint(o.Model.Call(1).Messages), "not on a Friday") {
		t.Errorf("the model did not get the reason: %v", o.Model.Call(1).Messages)
	}
}

// testQuorumEdit: an edit is only a call's first decision, and the
// approvals after it name its input hash.
func testQuorumEdit(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, _ := o.pauseOn(t, "drop")
	a := o.do(t, "POST", url, bob, `{"decisions":[{"tool_call_id":"c-drop","action":"edit","input":{"text":"drop staging"}}]}`)
	if status(a) != "200 Paused 1/2" {
		t.Fatalf("bob edits: %v", a)
	}
	p := a.Body["pending_approvals"].([]any)[0].(map[string]any)
	hash, _ := p["input_hash"].(string)
	if diff := cmp.Diff(map[string]any{"text": "drop staging"}, p["input"]); diff != "" || hash != agent.InputHash(json.RawMessage(`{"text":"drop staging"}`)) {
		t.Errorf("the call after the edit: input (-want +got):\n%s hash %q", diff, hash)
	}
	if a := o.do(t, "POST", url, dave, `{"action":"approve"}`); status(a) != "409 decision_conflict" {
		t.Errorf("dave approves without the hash: %v, want 409", a)
	}
	if a := o.do(t, "POST", url, dave, `{"decisions":[{"tool_call_id":"c-drop","action":"edit","input":{"text":"drop nothing"}}]}`); status(a) != "409 decision_conflict" {
		t.Errorf("dave edits after an approval: %v, want 409", a)
	}
	o.Model.Add(agenttest.Say("dropped staging"))
	if a := o.do(t, "POST", url, dave, `{"decisions":[{"tool_call_id":"c-drop","action":"approve","input_hash":"`+hash+`"}]}`); status(a) != "200 Completed" {
		t.Fatalf("dave approves with the hash: %v", a)
	}
	if diff := cmp.Diff([]string{"drop staging"}, o.drop.Runs()); diff != "" {
		t.Errorf("drop's runs (-want +got):\n%s", diff)
	}
}

// testQuorumTrust: remember is refused where four eyes or a quorum apply,
// and the owner's trust of a default rule does not reach a four-eyes call.
func testQuorumTrust(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, _ := o.pauseOn(t, "drop")
	if a := o.do(t, "POST", url, bob, `{"decisions":[{"tool_call_id":"c-drop","action":"approve","remember":"task"}]}`); status(a) != "400 invalid_decisions" {
		t.Errorf("remember on a quorum-2 call: %v, want 400 invalid_decisions", a)
	}
	if a := o.do(t, "POST", url, bob, `{"action":"approve","remember":"task"}`); status(a) != "400 invalid_action" {
		t.Errorf("remember (action) on a quorum-2 call: %v, want 400 invalid_action", a)
	}
	// Alice trusts guarded (the default policy) and wipe cannot be trusted
	// by her: her next turn pauses on wipe alone.
	url2, paused := o.pauseOn(t, "guarded")
	task := paused.Body["task_id"].(string)
	o.Model.Add(agenttest.Say("ok"))
	if a := o.do(t, "POST", url2, alice, `{"action":"approve","remember":"task"}`); status(a) != "200 Completed" {
		t.Fatalf("alice trusts guarded: %v", a)
	}
	o.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("g2", "guarded", "again"), Call("w2", "wipe", "all")))
	a := o.do(t, "POST", "/agents/ops/invoke", alice, `{"task_id":"`+task+`","items":[{"content":"more"}]}`)
	var pending []string
	for _, p := range a.Body["pending_approvals"].([]any) {
		pending = append(pending, p.(map[string]any)["tool_call_id"].(string))
	}
	if diff := cmp.Diff([]string{"w2"}, pending); diff != "" || a.Body["status"] != "Paused" {
		t.Errorf("after alice's trust: %v, pending (-want +got):\n%s", a, diff)
	}
}

// testQuorumExpiry: a round that expires at 1 of 2 answers 410, and keeps
// the approval beside the expiry.
func testQuorumExpiry(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, _ := o.pauseOn(t, "drop")
	if a := o.do(t, "POST", url, bob, `{"action":"approve"}`); status(a) != "200 Paused 1/2" {
		t.Fatalf("bob: %v", a)
	}
	o.Advance(2 * time.Hour)
	if a := o.do(t, "POST", url, dave, `{"action":"approve"}`); status(a) != "410 approval_expired" {
		t.Errorf("dave after the expiry: %v, want 410 approval_expired", a)
	}
	task := o.do(t, "GET", url[:strings.Index(url, "/requests/")], alice, "")
	dec := task.Body["requests"].([]any)[0].(map[string]any)["decisions"].([]any)[0].(map[string]any)
	var by []any
	for _, ap := range dec["calls"].([]any)[0].(map[string]any)["approvals"].([]any) {
		by = append(by, ap.(map[string]any)["by"])
	}
	if diff := cmp.Diff([]any{"bob"}, by); diff != "" || dec["approver"] != agent.ApproverExpiry {
		t.Errorf("the expired round: approver %v, approvals (-want +got):\n%s", dec["approver"], diff)
	}
	if n := len(o.drop.Runs()); n != 0 {
		t.Errorf("drop ran %d times", n)
	}
}

// testFourEyesAtTheCaller: a leaf call is judged by the leaf's policy
// wherever the decision arrives — at its caller, the requester is refused
// as at the leaf, and another of the group decides it there.
func testFourEyesAtTheCaller(t *testing.T, env *Env) {
	o := newOps(t, env)
	o.Model.Add(agenttest.CallTools(agent.StopToolUse, agenttest.Use("k1", "ops", `{"message":"wipe prod"}`)))
	o.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("c-wipe", "wipe", "wipe prod")))
	a := o.do(t, "POST", "/agents/desk/invoke", alice, `{"items":[{"content":"clean up"}]}`)
	if status(a) != "200 Paused 0/1" {
		t.Fatalf("desk: %v", a)
	}
	url := a.Body["resume_url"].(string)
	if a := o.do(t, "POST", url, alice, `{"action":"approve"}`); status(a) != "403 not_approver" {
		t.Errorf("alice at desk: %v, want 403 not_approver", a)
	}
	if a := o.do(t, "POST", url, carol, `{"action":"approve"}`); status(a) != "401 not_owner" {
		t.Errorf("carol at desk: %v, want 401 not_owner", a)
	}
	o.Model.Add(agenttest.Say("wiped"), agenttest.Say("done"))
	if a := o.do(t, "POST", url, bob, `{"action":"approve"}`); status(a) != "200 Completed" {
		t.Fatalf("bob at desk: %v", a)
	}
	if diff := cmp.Diff([]string{"wipe prod"}, o.wipe.Runs()); diff != "" {
		t.Errorf("wipe's runs (-want +got):\n%s", diff)
	}
}

// testEachCallItsDecider: in a round of a default call and a four-eyes
// one, the owner's approval of hers is recorded while the other waits,
// and each call's event names who decided it.
func testEachCallItsDecider(t *testing.T, env *Env) {
	o := newOps(t, env)
	url, _ := o.pauseOn(t, "guarded", "wipe")
	if a := o.do(t, "POST", url, alice, `{"action":"approve"}`); a.Status != 200 || a.Body["status"] != "Paused" || len(o.Guarded.Runs()) != 0 {
		t.Fatalf("alice approves hers: %v (guarded ran %d times)", a, len(o.Guarded.Runs()))
	}
	o.Model.Add(agenttest.Say("both done"))
	a := o.do(t, "POST", url, bob, `{"action":"approve"}`, "Accept", "text/event-stream")
	var got []string
	for _, line := range strings.Split(a.raw, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"by"`) && !strings.Contains(data, `"needed"`) {
			var ev struct {
				ToolCallID string `json:"tool_call_id"`
				By         string `json:"by"`
			}
			_ = json.Unmarshal([]byte(data), &ev)
			got = append(got, ev.ToolCallID+" by "+ev.By)
		}
	}
	if diff := cmp.Diff([]string{"c-guarded by alice", "c-wipe by bob"}, got); diff != "" {
		t.Errorf("the decisions' events (-want +got):\n%s\n%s", diff, a.raw)
	}
	if len(o.Guarded.Runs()) != 1 || len(o.wipe.Runs()) != 1 {
		t.Errorf("runs: guarded %v, wipe %v; want one each", o.Guarded.Runs(), o.wipe.Runs())
	}
}

// testDecisionView: one who may decide a call of a paused round, not the
// task's owner, reads that request alone — not the task's earlier ones.
func testDecisionView(t *testing.T, env *Env) {
	o := newOps(t, env)
	o.Model.Add(agenttest.Say("hello"))
	first := o.do(t, "POST", "/agents/ops/invoke", alice, `{"items":[{"content":"my secret plan"}]}`)
	task := first.Body["task_id"].(string)
	o.Model.Add(agenttest.CallTools(agent.StopToolUse, Call("c-drop", "drop", "drop prod")))
	paused := o.do(t, "POST", "/agents/ops/invoke", alice, `{"task_id":"`+task+`","items":[{"content":"drop prod"}]}`)
	rid := paused.Body["request_id"].(string)
	v := o.do(t, "GET", "/agents/ops/tasks/"+task, bob, "")
	if v.Status != 200 || v.Body["view"] != "approver" {
		t.Fatalf("bob's GET: %v", v)
	}
	var seen []string
	for _, r := range v.Body["requests"].([]any) {
		seen = append(seen, "request "+r.(map[string]any)["request_id"].(string))
	}
	for _, it := range v.Body["items"].([]any) {
		seen = append(seen, "item of "+it.(map[string]any)["request_id"].(string))
	}
	want := []string{"request " + rid, "item of " + rid, "item of " + rid}
	if diff := cmp.Diff(want, seen); diff != "" || strings.Contains(v.raw, "secret") {
		t.Errorf("the decision view (-want +got):\n%s", diff)
	}
	if a := o.do(t, "GET", "/agents/ops/tasks/"+task, carol, ""); status(a) != "401 not_owner" {
		t.Errorf("carol's GET: %v", a)
	}
}
