package catalog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hitch-agents/hitch/internal/a2a"
	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

// The definition's shape.
const (
	APIVersion = "tealagents/v1alpha1"
	Kind       = "Agent"
)

var (
	// agentName: a name usable in a URL path.
	agentName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	// toolName: what Bedrock accepts as a tool's name.
	toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// functionName: Lambda's FunctionName (a name, a partial or a full ARN,
	// optionally qualified).
	functionName = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:lambda:)?([a-z]{2}(-gov)?-[a-z]+-\d:)?(\d{12}:)?(function:)?[a-zA-Z0-9_.-]{1,140}(:(\$LATEST|[a-zA-Z0-9_-]+))?$`)
)

// Ranges of the numbers of spec.agent.
const (
	maxMaxTokens       = 200_000
	maxMaxIterations   = 100
	minToolResultBytes = 1024
	maxToolResultBytes = 1 << 20
	minReasoningBudget = 1024
	maxTemperature     = 1.0
)

// parse reads one definition. dir is the file's directory in the FS.
func parse(file string, data []byte, env Env, dir string, ps *places) (*agent.Agent, error) {
	d := &decoder{file: file, places: ps}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Reason: "empty file; want an agent definition"}
		}
		return nil, &Error{File: file, Reason: err.Error()}
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, &Error{File: file, Reason: "more than one YAML document; one agent per file"}
	}
	a := d.definition(doc.Content[0], env, dir)
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return a, nil
}

func (d *decoder) definition(n *yaml.Node, env Env, dir string) *agent.Agent {
	f := d.fields(n, "", "apiVersion", "kind", "name", "version", "description", "spec")
	if f == nil {
		return nil
	}
	a := &agent.Agent{
		MaxTokens:          agent.DefaultMaxTokens,
		MaxIterations:      agent.DefaultMaxIterations,
		MaxToolResultBytes: agent.DefaultMaxToolResultBytes,
	}
	for _, key := range []string{"apiVersion", "kind", "name", "version", "spec"} {
		if f[key] == nil {
			d.fail(key, "required")
		}
	}
	if n := f["apiVersion"]; n != nil {
		if s, ok := d.str(n, "apiVersion"); ok && s != APIVersion {
			d.fail("apiVersion", "must be %s, got %q", APIVersion, s)
		}
	}
	if n := f["kind"]; n != nil {
		if s, ok := d.str(n, "kind"); ok && s != Kind {
			d.fail("kind", "must be %s, got %q", Kind, s)
		}
	}
	if n := f["name"]; n != nil {
		if s, ok := d.str(n, "name"); ok {
			if !agentName.MatchString(s) {
				d.fail("name", "%q is not usable in a URL path: want 1 to 64 of a-z, 0-9, - and _, starting with a letter or digit", s)
			}
			a.Name = s
		}
	}
	if n := f["version"]; n != nil {
		a.Version, _ = d.nonEmpty(n, "version")
	}
	if n := f["description"]; n != nil {
		a.Description, _ = d.str(n, "description")
	}
	if n := f["spec"]; n != nil {
		if spec := d.fields(n, "spec", "agent", "notifications"); spec != nil {
			if spec["agent"] == nil {
				d.fail("spec.agent", "required")
			} else {
				d.spec(spec["agent"], a, env, dir)
			}
			if spec["notifications"] != nil {
				d.notifications(spec["notifications"], "spec.notifications", a, env)
			}
		}
	}
	return a
}

// spec reads spec.agent into a.
func (d *decoder) spec(n *yaml.Node, a *agent.Agent, env Env, dir string) {
	const at = "spec.agent"
	f := d.fields(n, at, "name", "model", "system_prompt", "temperature", "max_tokens", "max_iterations",
		"max_tool_result_bytes", "reasoning", "default_requires_approval", "tools", "context", "cache")
	if f == nil {
		return
	}
	if n := f["name"]; n != nil {
		d.str(n, join(at, "name"))
	}
	if n := f["model"]; n != nil {
		a.ModelID, _ = d.nonEmpty(n, join(at, "model"))
	} else {
		d.fail(join(at, "model"), "required")
	}
	if n := f["system_prompt"]; n != nil {
		a.SystemPrompt, _ = d.str(n, join(at, "system_prompt"))
	}
	if n := f["temperature"]; n != nil {
		if t, ok := d.number(n, join(at, "temperature"), 0, maxTemperature); ok {
			a.Temperature = &t
		}
	}
	if n := f["max_tokens"]; n != nil {
		if v, ok := d.integer(n, join(at, "max_tokens"), 1, maxMaxTokens); ok {
			a.MaxTokens = v
		}
	}
	if n := f["max_iterations"]; n != nil {
		if v, ok := d.integer(n, join(at, "max_iterations"), 1, maxMaxIterations); ok {
			a.MaxIterations = v
		}
	}
	if n := f["max_tool_result_bytes"]; n != nil {
		if v, ok := d.integer(n, join(at, "max_tool_result_bytes"), minToolResultBytes, maxToolResultBytes); ok {
			a.MaxToolResultBytes = v
		}
	}
	if n := f["reasoning"]; n != nil {
		d.reasoning(n, join(at, "reasoning"), a)
	}
	if n := f["context"]; n != nil {
		d.context(n, join(at, "context"), a)
	}
	a.CacheTTL = d.cache(f["cache"], join(at, "cache"), a.ModelID)
	defaultApproval := false
	if n := f["default_requires_approval"]; n != nil {
		defaultApproval, _ = d.boolean(n, join(at, "default_requires_approval"))
	}
	if n := f["tools"]; n != nil {
		d.tools(n, join(at, "tools"), a, defaultApproval, env, dir)
	}
}

func (d *decoder) reasoning(n *yaml.Node, at string, a *agent.Agent) {
	f := d.fields(n, at, "budget_tokens")
	if f == nil {
		return
	}
	field := join(at, "budget_tokens")
	if f["budget_tokens"] == nil {
		d.fail(field, "required")
		return
	}
	v, ok := d.integer(f["budget_tokens"], field, minReasoningBudget, maxMaxTokens)
	if !ok {
		return
	}
	if v >= a.MaxTokens {
		d.fail(field, "must be less than max_tokens (%d), got %d", a.MaxTokens, v)
		return
	}
	a.ReasoningBudget = v
}

// tools reads spec.agent.tools and binds them.
func (d *decoder) tools(n *yaml.Node, at string, a *agent.Agent, defaultApproval bool, env Env, dir string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(at, "must be a list, got %s", describe(n))
		return
	}
	definedAt := map[string]string{}
	for i, e := range n.Content {
		field := index(at, i)
		bound, nameField := d.toolEntry(deref(e), field, defaultApproval, env, dir)
		for _, b := range bound {
			name := b.Tool.Spec().Name
			if prev, ok := definedAt[name]; ok {
				d.fail(nameField, "tool %q is already defined by %s", name, prev)
				continue
			}
			definedAt[name] = field
			a.Tools = append(a.Tools, b)
		}
	}
	bindArtifactFiles(a.Tools)
	d.checkPolicies(at, a.Tools)
}

// bindArtifactFiles gives save_artifact the agent's files tools, for its
// from_path.
func bindArtifactFiles(bound []agent.BoundTool) {
	var files *tools.FileTool
	for _, b := range bound {
		if ft, ok := b.Tool.(*tools.FileTool); ok {
			files = ft
			break
		}
	}
	if files == nil {
		return
	}
	for _, b := range bound {
		if sa, ok := b.Tool.(*tools.SaveArtifact); ok {
			sa.UseFiles(files)
		}
	}
}

// toolEntry reads one entry of spec.agent.tools: a builtin group or a Lambda
// function. nameField is where a duplicate name is reported.
func (d *decoder) toolEntry(n *yaml.Node, at string, defaultApproval bool, env Env, dir string) (bound []agent.BoundTool, nameField string) {
	f := d.fields(n, at, "builtin", "config", "lambda", "name", "description", "input_schema",
		"requires_approval", "idempotent", "approval_ttl", "timeout", "mcp", "headers", "allow", "optional", "agent", "a2a", "artifacts_from",
		"client", "result_schema", "input_ttl", "approvers", "quorum", "separate_from_requester", "answerers")
	if f == nil {
		return nil, at
	}
	bound, nameField = d.bindEntry(f, at, defaultApproval, env, dir)
	d.entryPolicy(f, at, bound)
	return bound, nameField
}

// entryPolicy gives the entry's approver policy to its tools: those that
// need approval are decided by it (their rules' own replace it). A policy
// on an entry none of whose tools needs approval is an error.
func (d *decoder) entryPolicy(f map[string]*yaml.Node, at string, bound []agent.BoundTool) {
	if f["answerers"] != nil && !(len(bound) == 1 && isInputTool(bound[0])) {
		d.fail(join(at, "answerers"), "only for an input tool (builtin: ask_user, or client: NAME); a tool that needs approval names approvers")
	}
	if !hasPolicy(f) || (len(bound) == 1 && isInputTool(bound[0])) {
		return
	}
	pol, ok := d.policy(f, at)
	if !ok || len(bound) == 0 {
		return
	}
	needs := false
	for i := range bound {
		bound[i].Policy.Approvers = pol
		needs = needs || bound[i].Policy.RequiresApproval
	}
	if !needs {
		d.fail(join(at, "approvers"), "no tool of this entry needs approval (requires_approval), so nobody approves its calls")
	}
}

// isInputTool tells whether b's calls pause for an answer (ask_user, a
// client tool).
func isInputTool(b agent.BoundTool) bool {
	_, ok := b.Tool.(agent.InputTool)
	return ok
}

// bindEntry binds the tools of one entry of spec.agent.tools.
func (d *decoder) bindEntry(f map[string]*yaml.Node, at string, defaultApproval bool, env Env, dir string) (bound []agent.BoundTool, nameField string) {
	if b, field, ok := d.inputEntry(f, at); ok {
		if b == nil {
			return nil, field
		}
		return []agent.BoundTool{*b}, field
	}
	for _, key := range []string{"result_schema", "input_ttl"} {
		if f[key] != nil && (key != "input_ttl" || (f["a2a"] == nil && f["mcp"] == nil)) {
			d.fail(join(at, key), "only for an input tool (builtin: ask_user, or client: NAME; input_ttl also for an a2a agent or an mcp server, whose questions wait that long)")
		}
	}
	policy := agent.ToolPolicy{ApprovalTTL: DefaultApprovalTTL, Timeout: DefaultToolTimeout}
	if n := f["approval_ttl"]; n != nil {
		if v, ok := d.duration(n, join(at, "approval_ttl")); ok {
			policy.ApprovalTTL = v
		}
	}
	if n := f["timeout"]; n != nil {
		if v, ok := d.duration(n, join(at, "timeout")); ok {
			policy.Timeout = v
		}
	}
	if n := f["input_ttl"]; n != nil && (f["a2a"] != nil || f["mcp"] != nil) {
		if v, ok := d.duration(n, join(at, "input_ttl")); ok {
			policy.InputTTL = v
		}
	}
	if f["agent"] != nil || f["a2a"] != nil {
		b := d.agentEntry(f, at, policy, env)
		if b == nil {
			return nil, join(at, "agent")
		}
		return []agent.BoundTool{*b}, join(at, "agent")
	}
	if f["mcp"] != nil {
		return d.mcpEntry(f, at, policy, env), join(at, "name")
	}
	for _, key := range []string{"headers", "allow", "optional"} {
		if f[key] != nil {
			d.fail(join(at, key), "not allowed here (only in an mcp entry)")
		}
	}
	if f["artifacts_from"] != nil && f["lambda"] == nil {
		d.fail(join(at, "artifacts_from"), "only in a lambda entry")
	}
	switch {
	case f["builtin"] != nil && f["lambda"] != nil:
		d.fail(at, "builtin and lambda are exclusive; one entry is a group or a function")
		return nil, at
	case f["builtin"] != nil:
		for _, key := range []string{"name", "description", "input_schema", "idempotent"} {
			if f[key] != nil {
				d.fail(join(at, key), "not allowed in a builtin entry (only in a lambda entry)")
			}
		}
		return d.builtin(f, at, policy, defaultApproval, env, dir), join(at, "builtin")
	case f["lambda"] != nil:
		if f["config"] != nil {
			d.fail(join(at, "config"), "not allowed in a lambda entry (only in a builtin entry)")
		}
		b := d.lambda(f, at, policy, defaultApproval, env)
		if b == nil {
			return nil, join(at, "name")
		}
		return []agent.BoundTool{*b}, join(at, "name")
	}
	d.fail(at, "needs builtin (a group: %s), lambda (a function ARN) or mcp (a server's URL)", strings.Join(tools.Groups(), ", "))
	return nil, at
}

// agentEntry binds another agent of the deployment as a tool (docs/architecture.md):
// `agent: NAME`, with an optional description (default: that agent's) and
// requires_approval (approving the delegation itself; default false).
// Whether the agent exists, cycles and depth are checked once every
// definition is read (link).
//
// With `a2a: URL` the agent is a remote A2A agent (docs/architecture.md and docs/api.md), NAME
// the tool's name, with headers as an MCP entry's (secret references).
func (d *decoder) agentEntry(f map[string]*yaml.Node, at string, policy agent.ToolPolicy, env Env) *agent.BoundTool {
	for _, key := range []string{"builtin", "config", "lambda", "mcp", "name", "input_schema", "idempotent", "timeout", "allow", "optional"} {
		if f[key] != nil {
			d.fail(join(at, key), "not allowed in an agent entry (agent, a2a, headers, description, requires_approval, approval_ttl, approvers, quorum, separate_from_requester)")
		}
	}
	if f["agent"] == nil {
		d.fail(join(at, "agent"), "required with a2a: the tool's name (the remote agent as this agent calls it)")
		return nil
	}
	name, ok := d.str(f["agent"], join(at, "agent"))
	if !ok {
		return nil
	}
	if !agentName.MatchString(name) {
		d.fail(join(at, "agent"), "%q is not an agent name", name)
		return nil
	}
	t := &agent.AgentTool{Agent: name, DefinedAt: join(at, "agent")}
	if f["a2a"] == nil && f["headers"] != nil {
		d.fail(join(at, "headers"), "only for a remote agent (a2a: URL)")
		return nil
	}
	if n := f["a2a"]; n != nil {
		raw, ok := d.str(n, join(at, "a2a"))
		if !ok {
			return nil
		}
		raw, err := expandEnv(raw)
		if err != nil {
			d.fail(join(at, "a2a"), "%v", err)
			return nil
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.fail(join(at, "a2a"), "%q is not an http(s) URL of an A2A agent (its JSON-RPC endpoint, e.g. https://host/a2a/billing)", raw)
			return nil
		}
		refs, ok := d.headerRefs(f["headers"], join(at, "headers"))
		if !ok {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), DefaultMCPTimeout)
		defer cancel()
		headers, ok := d.resolveHeaders(ctx, refs, join(at, "headers"), env.MCP.Secrets)
		if !ok {
			return nil
		}
		rem := a2a.NewRemote(raw, headers, env.MCP.HTTPClient)
		rem.Log = env.MCP.Log
		t.Remote = rem
		t.Description = "The remote agent " + name + " (A2A)."
	}
	if n := f["description"]; n != nil {
		if t.Description, ok = d.nonEmpty(n, join(at, "description")); !ok {
			return nil
		}
	}
	if n := f["requires_approval"]; n != nil {
		v, ok := d.boolean(n, join(at, "requires_approval"))
		if !ok {
			return nil
		}
		policy.RequiresApproval = v
	}
	if !policy.RequiresApproval {
		policy.ApprovalTTL = 0
	}
	// A sub-agent call is bounded by the child's own legs, not a tool timeout.
	policy.Timeout = 0
	return &agent.BoundTool{Tool: t, Policy: policy}
}

// builtin binds a built-in group.
func (d *decoder) builtin(f map[string]*yaml.Node, at string, policy agent.ToolPolicy, defaultApproval bool, env Env, dir string) []agent.BoundTool {
	group, ok := d.str(f["builtin"], join(at, "builtin"))
	if !ok {
		return nil
	}
	var members []tools.Builtin
	switch group {
	case tools.GroupClock:
		if f["config"] != nil {
			d.fail(join(at, "config"), "the clock group takes no config")
		}
		members = tools.Clock(env.Now)
	case tools.GroupFiles:
		cfg, ok := d.filesConfig(f["config"], join(at, "config"), env, dir)
		if !ok {
			return nil
		}
		members = tools.Files(cfg)
	case tools.GroupArtifacts:
		if f["config"] != nil {
			d.fail(join(at, "config"), "the artifacts group takes no config (save_artifact's from_path reads the files group's files)")
		}
		members = tools.Artifacts()
	default:
		d.fail(join(at, "builtin"), "unknown group %q (known: %s)", group, strings.Join(tools.Groups(), ", "))
		return nil
	}
	var names []string
	for _, m := range members {
		names = append(names, m.Tool.Spec().Name)
	}
	needs, rules, ok := d.requiresApproval(f["requires_approval"], join(at, "requires_approval"), names, defaultApproval)
	if !ok {
		return nil
	}
	out := make([]agent.BoundTool, 0, len(members))
	for _, m := range members {
		p := policy
		p.Idempotent = m.Idempotent
		p.RequiresApproval = needs(m.Tool.Spec().Name)
		if !p.RequiresApproval {
			p.ApprovalTTL = 0
		}
		out = append(out, agent.BoundTool{Tool: m.Tool, Policy: p})
	}
	d.bindRules(rules, out)
	return out
}

// filesRoot reads config.root, relative to the agent file's directory.
// filesConfig reads a files group's config: root, a directory relative to
// the agent file's, and s3, an s3://bucket/prefix URL or env:NAME naming one.
// Files go to S3 when s3 is set and the environment reaches S3, else to the
// directory where the disk is shared (hitch serve); elsewhere (Lambda
// without S3) every call answers ErrFilesUnavailable.
func (d *decoder) filesConfig(n *yaml.Node, at string, env Env, dir string) (tools.FilesConfig, bool) {
	if n == nil {
		d.fail(join(at, "root"), "required: the directory the files tools work in (or s3: s3://bucket/prefix)")
		return tools.FilesConfig{}, false
	}
	f := d.fields(n, at, "root", "s3")
	if f == nil {
		return tools.FilesConfig{}, false
	}
	if f["root"] == nil && f["s3"] == nil {
		d.fail(join(at, "root"), "required: the directory the files tools work in (or s3: s3://bucket/prefix)")
		return tools.FilesConfig{}, false
	}
	cfg := tools.FilesConfig{Unavailable: true}
	if f["s3"] != nil {
		ref, ok := d.nonEmpty(f["s3"], join(at, "s3"))
		if !ok {
			return cfg, false
		}
		url := ref
		if name, isEnv := strings.CutPrefix(ref, "env:"); isEnv {
			if name == "" {
				d.fail(join(at, "s3"), "env: needs a variable name, e.g. env:HITCH_FILES_S3")
				return cfg, false
			}
			url = os.Getenv(name) // unset: not configured here (hitch serve keeps the directory)
		}
		if url != "" {
			bucket, prefix, err := tools.ParseS3URL(url)
			if err != nil {
				d.fail(join(at, "s3"), "%v", err)
				return cfg, false
			}
			d.noteFiles(join(at, "s3"), bucket, prefix)
			if env.S3Files != nil {
				return tools.FilesConfig{Store: env.S3Files(bucket, prefix)}, true
			}
		}
	}
	if f["root"] == nil {
		return cfg, true
	}
	root, ok := d.nonEmpty(f["root"], join(at, "root"))
	if !ok {
		return cfg, false
	}
	if !filepath.IsAbs(root) {
		root = filepath.Join(env.BaseDir, filepath.FromSlash(dir), root)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		d.fail(join(at, "root"), "cannot be resolved: %v", err)
		return cfg, false
	}
	if !d.checkRoot(env, join(at, "root"), abs) {
		return cfg, false
	}
	return tools.FilesConfig{Root: abs, Unavailable: !env.Files}, true
}

// requiresApproval reads requires_approval of a group: true, false, or a
// list of the group's tools that need approval, each a name (always) or a
// rule {tool, when} (only for the calls whose input matches; rules.go).
// Absent: the agent's default. The rules come back for bindRules.
func (d *decoder) requiresApproval(n *yaml.Node, at string, group []string, def bool) (func(string) bool, []approvalRule, bool) {
	if n == nil {
		return func(string) bool { return def }, nil, true
	}
	if n.Kind == yaml.ScalarNode {
		v, ok := d.boolean(n, at)
		return func(string) bool { return v }, nil, ok
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(at, "must be true, false or a list of the group's tools (names or rules {tool, when}), got %s", describe(n))
		return nil, nil, false
	}
	ok := true
	set := map[string]bool{}
	ruled := map[string]bool{}
	var rules []approvalRule
	for i, e := range n.Content {
		e = deref(e)
		if e.Kind == yaml.MappingNode {
			r, okRule := d.ruleEntry(e, index(at, i), group)
			if !okRule {
				ok = false
				continue
			}
			if set[r.rule.Tool] {
				d.fail(index(at, i), "%q is listed by name, so it always needs approval; a rule would change nothing", r.rule.Tool)
				ok = false
			}
			ruled[r.rule.Tool] = true
			rules = append(rules, r)
			continue
		}
		if e.Kind != yaml.ScalarNode || e.Tag != "!!str" {
			d.fail(index(at, i), "must be a tool's name or a rule {tool, when}, got %s", describe(e))
			ok = false
			continue
		}
		name := e.Value
		switch {
		case !contains(group, name):
			d.fail(index(at, i), "unknown tool %q: the group has %s", name, strings.Join(group, ", "))
			ok = false
		case set[name]:
			d.fail(index(at, i), "%q is listed twice", name)
			ok = false
		case ruled[name]:
			d.fail(index(at, i), "%q has rules, so listing it by name would make them change nothing", name)
			ok = false
		}
		set[name] = true
	}
	return func(name string) bool { return set[name] || ruled[name] }, rules, ok
}

// lambda binds a Lambda function.
func (d *decoder) lambda(f map[string]*yaml.Node, at string, policy agent.ToolPolicy, defaultApproval bool, env Env) *agent.BoundTool {
	fn, ok := d.str(f["lambda"], join(at, "lambda"))
	if ok && !functionName.MatchString(fn) {
		d.fail(join(at, "lambda"), "%q is not a Lambda function name or ARN", fn)
		ok = false
	}
	cfg := tools.LambdaConfig{Function: fn}
	if n := f["name"]; n == nil {
		d.fail(join(at, "name"), "required: the tool's name for the model")
		ok = false
	} else if s, okName := d.str(n, join(at, "name")); !okName {
		ok = false
	} else if !toolName.MatchString(s) {
		d.fail(join(at, "name"), "%q is not a tool name: want 1 to 64 of a-z, A-Z, 0-9, _ and -", s)
		ok = false
	} else {
		cfg.Name = s
	}
	if n := f["description"]; n == nil {
		d.fail(join(at, "description"), "required: it tells the model what the tool does")
		ok = false
	} else if s, okDesc := d.nonEmpty(n, join(at, "description")); !okDesc {
		ok = false
	} else {
		cfg.Description = s
	}
	cfg.InputSchema = defaultInputSchema
	if n := f["input_schema"]; n != nil {
		cfg.InputSchema = d.inputSchema(n, join(at, "input_schema"))
		ok = ok && cfg.InputSchema != nil
	}
	needs := defaultApproval
	var rules []approvalRule
	if n := f["requires_approval"]; n != nil && cfg.Name != "" {
		need, rs, okReq := d.requiresApproval(n, join(at, "requires_approval"), []string{cfg.Name}, defaultApproval)
		if okReq {
			needs, rules = need(cfg.Name), rs
		}
		ok = ok && okReq
	}
	if n := f["idempotent"]; n != nil {
		v, okIdem := d.boolean(n, join(at, "idempotent"))
		policy.Idempotent, ok = v, ok && okIdem
	}
	if n := f["artifacts_from"]; n != nil {
		raw, okFrom := d.nonEmpty(n, join(at, "artifacts_from"))
		if okFrom {
			bucket, prefix, err := tools.ParseS3Prefix(raw)
			switch {
			case err != nil:
				d.fail(join(at, "artifacts_from"), "%v", err)
				okFrom = false
			case env.S3 == nil:
				d.fail(join(at, "artifacts_from"), "needs an S3 client, and none is configured here")
				okFrom = false
			case !d.checkFrom(env, join(at, "artifacts_from"), bucket, prefix):
				okFrom = false
			default:
				cfg.ArtifactsFrom = &tools.S3Prefix{Bucket: bucket, Prefix: prefix, Client: env.S3}
			}
		}
		ok = ok && okFrom
	}
	if env.Lambda == nil {
		d.fail(join(at, "lambda"), "lambda tools need a Lambda client, and none is configured here")
		ok = false
	}
	if !ok {
		return nil
	}
	tool, err := tools.NewLambda(env.Lambda, cfg)
	if err != nil {
		d.fail(at, "%v", err)
		return nil
	}
	policy.RequiresApproval = needs
	if !needs {
		policy.ApprovalTTL = 0
	}
	bound := []agent.BoundTool{{Tool: tool, Policy: policy}}
	d.bindRules(rules, bound)
	return &bound[0]
}

// defaultInputSchema is a lambda tool's schema when its entry gives none.
var defaultInputSchema = tools.MustCompileSchema(`{"type":"object","properties":{}}`)

// inputSchema compiles a lambda tool's input_schema.
func (d *decoder) inputSchema(n *yaml.Node, at string) *tools.Schema {
	raw, ok := d.toJSON(n, at)
	if !ok {
		return nil
	}
	s, err := tools.CompileSchema(raw)
	if err != nil {
		d.fail(at, "%v", err)
		return nil
	}
	return s
}

// inputEntry reads an input tool's entry (docs/api.md, "Pauses for
// input"): `builtin: ask_user`, or `client: NAME` with description,
// input_schema and an optional result_schema; either with input_ttl
// (default 24h). Input tools never need approval: requires_approval on
// one is an error, and default_requires_approval passes them by. ok is
// false when the entry is not an input tool's.
func (d *decoder) inputEntry(f map[string]*yaml.Node, at string) (b *agent.BoundTool, field string, ok bool) {
	isAsk := false
	if n := f["builtin"]; n != nil && f["client"] == nil {
		if s, isStr := d.peekStr(n); !isStr || s != tools.GroupAskUser {
			return nil, "", false
		}
		isAsk = true
	} else if f["client"] == nil {
		return nil, "", false
	}
	field = join(at, "client")
	allowed := []string{"client", "description", "input_schema", "result_schema", "input_ttl", "answerers"}
	if isAsk {
		field = join(at, "builtin")
		allowed = []string{"builtin", "input_ttl", "answerers"}
	}
	for _, key := range slices.Sorted(maps.Keys(f)) {
		if !contains(allowed, key) {
			what := "a client tool's entry (client, description, input_schema, result_schema, input_ttl, answerers)"
			if isAsk {
				what = "ask_user's entry (builtin, input_ttl, answerers)"
			}
			switch key {
			case "requires_approval", "approval_ttl":
				d.fail(join(at, key), "an input tool never needs approval: its calls pause for the user's answer")
				continue
			case "approvers", "quorum", "separate_from_requester":
				d.fail(join(at, key), "an input tool's calls are answered, not approved: answerers names who may answer (any one of them)")
				continue
			}
			d.fail(join(at, key), "not allowed in %s", what)
		}
	}
	policy := agent.ToolPolicy{InputTTL: agent.DefaultInputTTL}
	if n := f["input_ttl"]; n != nil {
		if v, okTTL := d.duration(n, join(at, "input_ttl")); okTTL {
			policy.InputTTL = v
		}
	}
	if n := f["answerers"]; n != nil {
		if who, okWho := d.principals(n, join(at, "answerers"), agent.MaxPolicyEntries); okWho {
			policy.Answerers = who
		}
	}
	if isAsk {
		return &agent.BoundTool{Tool: tools.AskUser{}, Policy: policy}, field, true
	}
	cfg := tools.ClientConfig{InputSchema: defaultInputSchema}
	name, okName := d.str(f["client"], field)
	if okName && !toolName.MatchString(name) {
		d.fail(field, "%q is not a tool name: want 1 to 64 of a-z, A-Z, 0-9, _ and -", name)
		okName = false
	}
	cfg.Name = name
	if n := f["description"]; n == nil {
		d.fail(join(at, "description"), "required: it tells the model what the client does")
		okName = false
	} else if s, okDesc := d.nonEmpty(n, join(at, "description")); okDesc {
		cfg.Description = s
	} else {
		okName = false
	}
	if n := f["input_schema"]; n != nil {
		cfg.InputSchema = d.inputSchema(n, join(at, "input_schema"))
		okName = okName && cfg.InputSchema != nil
	}
	if n := f["result_schema"]; n != nil {
		raw, okJSON := d.toJSON(n, join(at, "result_schema"))
		if okJSON {
			s, err := tools.CompileValueSchema(raw)
			if err != nil {
				d.fail(join(at, "result_schema"), "%v", err)
				okName = false
			}
			cfg.ResultSchema = s
		} else {
			okName = false
		}
	}
	if !okName {
		return nil, field, true
	}
	c, err := tools.NewClient(cfg)
	if err != nil {
		d.fail(at, "%v", err)
		return nil, field, true
	}
	return &agent.BoundTool{Tool: c, Policy: policy}, field, true
}
