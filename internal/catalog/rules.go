package catalog

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/glob"
)

// approvalRule is a rule read from a requires_approval list, waiting for its
// tool's schema to check its fields against.
type approvalRule struct {
	rule agent.ApprovalRule
	// at is the rule's field path; fields the field path of each When.
	at     string
	fields []string
}

// ruleEntry reads one rule of a requires_approval list:
// {tool: NAME, when: {FIELD: GLOB, …}}, with an approver policy of its own
// (approvers, quorum, separate_from_requester) replacing the entry's. The
// tool must be one of group. A rule without when asks for every call of
// its tool.
func (d *decoder) ruleEntry(n *yaml.Node, at string, group []string) (approvalRule, bool) {
	f := d.fields(n, at, "tool", "when", "approvers", "quorum", "separate_from_requester")
	if f == nil {
		return approvalRule{}, false
	}
	r := approvalRule{at: at}
	pol, ok := d.policy(f, at)
	r.rule.Approvers = pol
	if f["tool"] == nil {
		d.fail(join(at, "tool"), "required: the tool the rule governs")
		ok = false
	} else if name, okName := d.str(f["tool"], join(at, "tool")); !okName {
		ok = false
	} else if !contains(group, name) {
		d.fail(join(at, "tool"), "unknown tool %q: the group has %s", name, strings.Join(group, ", "))
		ok = false
	} else {
		r.rule.Tool = name
	}
	if f["when"] == nil {
		return r, ok // every call of the tool
	}
	when := d.mapping(f["when"], join(at, "when"))
	if when == nil {
		return r, false
	}
	if len(when) == 0 {
		d.fail(join(at, "when"), "must name at least one input field")
		return r, false
	}
	keys := make([]string, 0, len(when))
	for k := range when {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, field := range keys {
		fat := join(join(at, "when"), field)
		pattern, okStr := d.str(when[field], fat)
		if !okStr {
			ok = false
			continue
		}
		g, err := glob.Compile(pattern)
		if err != nil {
			d.fail(fat, "bad glob: %v", err)
			ok = false
			continue
		}
		r.rule.When = append(r.rule.When, agent.FieldGlob{Field: field, Glob: pattern, Match: g.Match})
		r.fields = append(r.fields, fat)
	}
	return r, ok
}

// bindRules gives each bound tool the rules read for it, checking every
// rule's fields against the tool's input schema.
func (d *decoder) bindRules(rules []approvalRule, bound []agent.BoundTool) {
	for i := range bound {
		spec := bound[i].Tool.Spec()
		props := schemaFields(spec.InputSchema)
		for _, r := range rules {
			if r.rule.Tool != spec.Name {
				continue
			}
			for k, w := range r.rule.When {
				if !slices.Contains(props, w.Field) {
					d.fail(r.fields[k], "tool %q has no input field %q (its fields: %s)", spec.Name, w.Field, strings.Join(props, ", "))
				}
			}
			bound[i].Policy.Rules = append(bound[i].Policy.Rules, r.rule)
		}
	}
}

// schemaFields lists the top-level properties of an input schema.
func schemaFields(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Ranges of spec.agent.context.
const (
	minInputTokens = 100
	maxInputTokens = 2_000_000
	maxKeepTurns   = 100
)

// context reads spec.agent.context: {max_input_tokens, keep_turns}.
func (d *decoder) context(n *yaml.Node, at string, a *agent.Agent) {
	f := d.fields(n, at, "max_input_tokens", "keep_turns")
	if f == nil {
		return
	}
	pol := agent.ContextPolicy{KeepTurns: agent.DefaultKeepTurns}
	if f["max_input_tokens"] == nil {
		d.fail(join(at, "max_input_tokens"), "required: the estimated input tokens past which older turns are summarised")
		return
	}
	v, ok := d.integer(f["max_input_tokens"], join(at, "max_input_tokens"), minInputTokens, maxInputTokens)
	if !ok {
		return
	}
	pol.MaxInputTokens = v
	if n := f["keep_turns"]; n != nil {
		k, ok := d.integer(n, join(at, "keep_turns"), 1, maxKeepTurns)
		if !ok {
			return
		}
		pol.KeepTurns = k
	}
	a.Context = pol
}

// mapping reads a mapping of any string keys (duplicates refused).
func (d *decoder) mapping(n *yaml.Node, at string) map[string]*yaml.Node {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.fail(at, "must be a mapping, got %s", describe(n))
		return nil
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			d.fail(at, "keys must be strings")
			return nil
		}
		if _, dup := out[k.Value]; dup {
			d.fail(join(at, k.Value), "duplicate key")
			return nil
		}
		out[k.Value] = n.Content[i+1]
	}
	return out
}
