package torture

import (
	"fmt"
	"strings"
)

// The processes: A serves the agents the workload starts; B serves the
// remote agents A's a2a: tools call (and some workloads of its own).
const (
	ProcA = "A"
	ProcB = "B"
)

// User is the user every operation runs as (dev auth: the bearer token is
// the user id); A calls B as the same user.
const User = "tort"

// OwnerToken is the owner's bearer token: tort, of the group sre (dev
// auth's ";groups="), so that four eyes keeps a member of the deciding
// group from approving their own call.
const OwnerToken = User + ";groups=sre"

// Approvers are the other members of sre, who approve the qx_ tool's
// calls (two of them: a quorum of 2, four eyes).
var Approvers = []string{"tq1", "tq2", "tq3"}

// QuorumTools are the tools whose calls need more than one approval, by
// the approvals they need.
var QuorumTools = map[string]int{"qx_effect": 2}

// WebhookSecret signs the webhooks of every agent (Standard Webhooks).
const WebhookSecret = "whsec_dG9ydHVyZS10ZXN0LXdlYmhvb2stc2VjcmV0LTAx"

// ShortTTL is the approval_ttl of the ex_ tools: rounds that wait longer
// expire.
const ShortTTL = "2s"

// Chain is a path of agents from the one the workload calls down to the
// leaf whose tools run; Remote is the index of the first agent reached over
// A2A (on B), or 0 when the whole chain is local to Proc.
type Chain struct {
	Proc   string
	Agents []string
	Remote int
	// Fan, when set, are the children the first agent calls side by side
	// in one model turn (a caller of two leaves: its decisions span both);
	// FanRemote the index in Fan of the one reached over A2A (-1: none).
	Fan       []string
	FanRemote int
}

// Depth is the chain's length: 1 for a leaf called directly.
func (c Chain) Depth() int { return len(c.Agents) }

// Chains are the chains of depth 1–3 the generator picks from.
var Chains = []Chain{
	{Proc: ProcA, Agents: []string{"leaf"}},
	{Proc: ProcA, Agents: []string{"mid", "leaf"}},
	{Proc: ProcA, Agents: []string{"top", "mid", "leaf"}},
	{Proc: ProcA, Agents: []string{"rmid", "leaf"}, Remote: 1},
	{Proc: ProcA, Agents: []string{"rtop", "mid", "leaf"}, Remote: 1},
	{Proc: ProcA, Agents: []string{"xtop", "rmid", "leaf"}, Remote: 2},
	{Proc: ProcB, Agents: []string{"leaf"}},
	{Proc: ProcB, Agents: []string{"mid", "leaf"}},
	{Proc: ProcA, Agents: []string{"duo", "leaf"}, Fan: []string{"leaf", "twin"}, FanRemote: -1},
	{Proc: ProcA, Agents: []string{"rduo", "twin"}, Fan: []string{"twin", "leaf"}, FanRemote: 1},
	{Proc: ProcB, Agents: []string{"duo", "leaf"}, Fan: []string{"leaf", "twin"}, FanRemote: -1},
}

// ProcessOf is the process serving the i-th agent of the chain.
func (c Chain) ProcessOf(i int) string {
	if c.Remote > 0 && i >= c.Remote {
		return ProcB
	}
	return c.Proc
}

// ApprovalTools are the leaf tools (as the model names them) that need
// approval; IdempotentTools those marked idempotent.
var (
	ApprovalTools   = map[string]bool{"fx_effect": true, "fx_upsert": true, "ex_effect": true, "qx_effect": true}
	IdempotentTools = map[string]bool{"fx_upsert": true}
	LeafTools       = []string{"fx_effect", "fx_upsert", "fx_peek", "fx_slow", "ex_effect", "qx_effect", FormTool}
)

// AskTool is the leaf's question (ask_user): its calls are answered, never
// run; the answer must reach the leaf's model once, as sent.
const AskTool = "ask_user"

// ClientTool is the leaves' client tool: the client carries it out and
// sends its result, {"pick": string}, which must fit its result_schema;
// like a question's answer, it must reach the model once, as sent.
const ClientTool = "pick"

// inputTool is whether a call is answered by a client, never run.
func inputTool(name string) bool { return name == AskTool || name == ClientTool }

// RemoteTools are, per agent of A, its tools that call an agent of B.
var RemoteTools = map[string]bool{"rmid/leaf": true, "rtop/mid": true, "rduo/leaf": true}

const agentHead = `apiVersion: tealagents/v1alpha1
kind: Agent
name: %s
version: 0.1
description: %s
spec:
  agent:
    model: local
    max_iterations: 8
    tools:
`

const notifications = `  notifications:
    - url: %s
      events: [request.paused, request.completed, request.failed, request.canceled]
      secret: env:TORTURE_WEBHOOK_SECRET
`

// Definitions are the agent files of a process: mcp is the test tools'
// MCP endpoint for it, hook its webhook receiver's URL, remote the other
// process's base URL (A's a2a: tools point there; empty for B).
func Definitions(mcp, hook, remote string) map[string]string {
	files := map[string]string{}
	add := func(name, desc, tools string) {
		files[name+".yaml"] = fmt.Sprintf(agentHead, name, desc) + tools + fmt.Sprintf(notifications, hook)
	}
	leafTools := fmt.Sprintf(`      - mcp: %[1]s
        name: fx
        requires_approval: [effect, upsert]
        idempotent: [upsert]
        approval_ttl: 10m
        timeout: 20s
      - mcp: %[1]s
        name: ex
        allow: [effect]
        requires_approval: true
        idempotent: false
        approval_ttl: %[2]s
        timeout: 20s
      - mcp: %[1]s
        name: qx
        allow: [effect]
        requires_approval: true
        approvers: [{group: sre}]
        quorum: 2
        separate_from_requester: true
        idempotent: false
        approval_ttl: 10m
        timeout: 20s
      - mcp: %[1]s/form
        name: fq
        requires_approval: false
        idempotent: false
        input_ttl: 10m
        timeout: 20s
      - builtin: ask_user
        input_ttl: 10m
      - client: pick
        description: The person picks a value for a tag.
        input_schema: {type: object, properties: {tag: {type: string}}, required: [tag]}
        result_schema: {type: object, properties: {pick: {type: string}}, required: [pick], additionalProperties: false}
        input_ttl: 10m
`, mcp, ShortTTL)
	add("leaf", "Runs the test tools.", leafTools)
	add("twin", "Runs the test tools too.", leafTools)
	add("mid", "Hands work to the leaf.", "      - agent: leaf\n")
	add("top", "Hands work to the mid.", "      - agent: mid\n")
	add("duo", "Hands work to the leaf and the twin at once.", "      - agent: leaf\n      - agent: twin\n")
	if remote != "" {
		remote = strings.TrimRight(remote, "/")
		add("rmid", "Hands work to the leaf of the other system.", fmt.Sprintf(`      - agent: leaf
        a2a: %s/a2a/leaf
        headers: {Authorization: env:HITCH_REMOTE_TOKEN}
`, remote))
		add("rtop", "Hands work to the mid of the other system.", fmt.Sprintf(`      - agent: mid
        a2a: %s/a2a/mid
        headers: {Authorization: env:HITCH_REMOTE_TOKEN}
`, remote))
		add("xtop", "Hands work to rmid.", "      - agent: rmid\n")
		add("rduo", "Hands work to the twin here and the leaf of the other system at once.", fmt.Sprintf(`      - agent: twin
      - agent: leaf
        a2a: %s/a2a/leaf
        headers: {Authorization: env:HITCH_REMOTE_TOKEN}
`, remote))
	}
	return files
}
