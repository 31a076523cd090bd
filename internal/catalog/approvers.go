package catalog

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hitch-agents/hitch/internal/agent"
)

// policyKeys are the keys of an approver policy, on a tool entry or a rule
// (docs/guide/configuration.md, "Approvers").
var policyKeys = []string{"approvers", "quorum", "separate_from_requester"}

// hasPolicy tells whether f sets any key of a policy.
func hasPolicy(f map[string]*yaml.Node) bool {
	for _, k := range policyKeys {
		if f[k] != nil {
			return true
		}
	}
	return false
}

// policy reads the approver policy f holds at `at`: nil, true when it
// holds none. approvers is required with quorum or
// separate_from_requester; quorum is 1–5 and at most the people the
// entries can name (a group: any number); owner cannot be four eyes'
// approver (the owner is the requester).
func (d *decoder) policy(f map[string]*yaml.Node, at string) (*agent.ApproverPolicy, bool) {
	if !hasPolicy(f) {
		return nil, true
	}
	if f["approvers"] == nil {
		d.fail(join(at, "approvers"), "required with quorum or separate_from_requester: who counts toward the call (owner, {user: ID}, {group: NAME})")
		return nil, false
	}
	who, ok := d.principals(f["approvers"], join(at, "approvers"), agent.MaxPolicyEntries)
	if !ok {
		return nil, false
	}
	p := &agent.ApproverPolicy{Approvers: who, Quorum: 1}
	if n := f["quorum"]; n != nil {
		q, ok := d.integer(n, join(at, "quorum"), 1, agent.MaxQuorum)
		if !ok {
			return nil, false
		}
		p.Quorum = q
	}
	if n := f["separate_from_requester"]; n != nil {
		v, ok := d.boolean(n, join(at, "separate_from_requester"))
		if !ok {
			return nil, false
		}
		p.FourEyes = v
	}
	if p.FourEyes && slices.Contains(who, agent.PrincipalOwner) {
		d.fail(join(at, "approvers"), "owner is the requester, whom separate_from_requester never counts: name the others who decide")
		return nil, false
	}
	if people, bounded := peopleNamed(who); bounded && p.Quorum > people {
		d.fail(join(at, "quorum"), "%d is more than the %d people approvers names (a group may name more)", p.Quorum, people)
		return nil, false
	}
	return p, true
}

// peopleNamed is how many people a list of principals names, when it names
// no group (bounded).
func peopleNamed(who []string) (int, bool) {
	for _, pr := range who {
		if strings.HasPrefix(pr, agent.GroupPrincipal("")) {
			return 0, false
		}
	}
	return len(who), true
}

// principals reads a list of 1 to most principals: owner, {user: ID} or
// {group: NAME}, none twice.
func (d *decoder) principals(n *yaml.Node, at string, most int) ([]string, bool) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(at, "must be a list of 1 to %d of owner, {user: ID} and {group: NAME}, got %s", most, describe(n))
		return nil, false
	}
	if len(n.Content) > most {
		d.fail(at, "%d entries: at most %d", len(n.Content), most)
		return nil, false
	}
	var out []string
	ok := true
	for i, e := range n.Content {
		pr, okE := d.principal(deref(e), index(at, i))
		switch {
		case !okE:
			ok = false
		case slices.Contains(out, pr):
			d.fail(index(at, i), "%s is listed twice", pr)
			ok = false
		default:
			out = append(out, pr)
		}
	}
	return out, ok
}

// principal reads one principal.
func (d *decoder) principal(e *yaml.Node, at string) (string, bool) {
	if e.Kind == yaml.ScalarNode && e.Value == agent.PrincipalOwner {
		return agent.PrincipalOwner, true
	}
	if e.Kind != yaml.MappingNode {
		d.fail(at, "must be owner, {user: ID} or {group: NAME}, got %s", describe(e))
		return "", false
	}
	f := d.fields(e, at, "user", "group")
	if f == nil || len(f) != len(e.Content)/2 {
		return "", false // an unknown key, reported
	}
	if (f["user"] == nil) == (f["group"] == nil) {
		d.fail(at, "must be one of {user: ID} or {group: NAME}")
		return "", false
	}
	if n := f["user"]; n != nil {
		id, ok := d.nonEmpty(n, join(at, "user"))
		if ok && strings.ContainsAny(id, " \t") {
			d.fail(join(at, "user"), "%q is not a user id (the token's user_id, no spaces)", id)
			return "", false
		}
		return agent.UserPrincipal(id), ok
	}
	name, ok := d.nonEmpty(f["group"], join(at, "group"))
	if ok && strings.ContainsAny(name, " \t,") {
		d.fail(join(at, "group"), "%q is not a group name (a value of the groups claim: no spaces or commas)", name)
		return "", false
	}
	return agent.GroupPrincipal(name), ok
}

// checkPolicies checks an agent's policies together: no tool whose rules'
// quorums sum past agent.MaxQuorum (a call may match them all), and at
// most agent.MaxAgentPrincipals principals in the agent.
func (d *decoder) checkPolicies(at string, bound []agent.BoundTool) {
	seen := map[string]bool{}
	note := func(who []string) {
		for _, pr := range who {
			seen[pr] = true
		}
	}
	for _, b := range bound {
		pol := b.Policy
		note(pol.Answerers)
		if pol.Approvers != nil {
			note(pol.Approvers.Approvers)
		}
		sum := 0
		for _, r := range pol.Rules {
			p := r.Approvers
			if p == nil {
				p = pol.Approvers
			}
			if p != nil {
				note(p.Approvers)
				sum += p.Quorum
			} else {
				sum++
			}
		}
		if sum > agent.MaxQuorum {
			d.fail(at, "tool %q: a call matching all its rules would need %d approvals, more than %d", b.Tool.Spec().Name, sum, agent.MaxQuorum)
		}
	}
	if len(seen) > agent.MaxAgentPrincipals {
		d.fail(at, "the agent's approvers and answerers name %d principals, more than %d", len(seen), agent.MaxAgentPrincipals)
	}
}
