package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/mcp"
	"github.com/hitch-agents/hitch/internal/redact"
	"github.com/hitch-agents/hitch/internal/secret"
)

// DefaultMCPTimeout bounds an MCP call, and the listing at start-up, when
// the entry says nothing.
const DefaultMCPTimeout = 30 * time.Second

// SecretResolver resolves env:NAME and ssm:/path; secret.Resolver is one.
type SecretResolver interface {
	Resolve(ctx context.Context, ref string) (string, error)
}

var _ SecretResolver = secret.Resolver{}

// MCPEnv is what MCP entries need from where the agents run.
type MCPEnv struct {
	// Secrets resolves header values; secret.Resolver{} (env: only) when nil.
	Secrets SecretResolver
	// HTTPClient reaches the servers; the default transport when nil.
	HTTPClient *http.Client
	// Log says which optional servers were left out; slog.Default when nil.
	Log *slog.Logger
}

func (e MCPEnv) logger() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

// mcpEntry binds the tools of an MCP server:
//
//   - mcp: https://host/mcp
//     name: tickets            # the tools become tickets_<tool>
//     headers: {Authorization: env:TOKEN}
//     allow: [search, close_ticket]
//     requires_approval: [close_ticket]   # or true/false; absent: annotations
//     idempotent: [search]                # or true/false; absent: annotations
//     timeout: 30s
//     optional: true           # down at start-up: load without its tools
//
// The URL may name environment variables, ${NAME} or ${NAME:-default}
// (examples/mcp/tickets.yaml: ${HITCH_MCP_ADDR:-127.0.0.1:8090}).
func (d *decoder) mcpEntry(f map[string]*yaml.Node, at string, policy agent.ToolPolicy, env Env) []agent.BoundTool {
	for _, key := range []string{"builtin", "lambda", "config", "description", "input_schema"} {
		if f[key] != nil {
			d.fail(join(at, key), "not allowed in an mcp entry")
		}
	}
	ok := true
	rawURL, okURL := d.str(f["mcp"], join(at, "mcp"))
	if okURL {
		var err error
		if rawURL, err = expandEnv(rawURL); err != nil {
			d.fail(join(at, "mcp"), "%v", err)
			okURL = false
		}
	}
	if okURL {
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.fail(join(at, "mcp"), "%q is not an http(s) URL of an MCP server", redact.URL(rawURL))
			okURL = false
		}
	}
	ok = ok && okURL
	prefix := ""
	if f["name"] == nil {
		d.fail(join(at, "name"), "required: the prefix of the server's tools (name: tickets gives tickets_<tool>)")
		ok = false
	} else if s, okName := d.str(f["name"], join(at, "name")); !okName {
		ok = false
	} else if !toolName.MatchString(s) || len(s) > 62 {
		d.fail(join(at, "name"), "%q is not a tool name prefix: want 1 to 62 of a-z, A-Z, 0-9, _ and -", s)
		ok = false
	} else {
		prefix = s
	}
	if f["timeout"] == nil {
		policy.Timeout = DefaultMCPTimeout
	}
	optional := false
	if n := f["optional"]; n != nil {
		var okOpt bool
		optional, okOpt = d.boolean(n, join(at, "optional"))
		ok = ok && okOpt
	}
	refs, okRefs := d.headerRefs(f["headers"], join(at, "headers"))
	ok = ok && okRefs
	var allow []string
	if n := f["allow"]; n != nil {
		var okAllow bool
		allow, okAllow = d.stringList(n, join(at, "allow"))
		ok = ok && okAllow
	}
	if !ok {
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), policy.Timeout)
	defer cancel()
	headers, ok := d.resolveHeaders(ctx, refs, join(at, "headers"), env.MCP.Secrets)
	if !ok {
		return nil
	}
	srv, remotes, err := mcp.Connect(ctx, mcp.Config{URL: rawURL, Name: prefix, Headers: headers, HTTPClient: env.MCP.HTTPClient, Log: env.MCP.Log})
	// What logs and errors show of the server: never the URL's user info
	// or query (docs/api.md, "An MCP server that asks").
	shown := prefix + " at " + redact.URL(rawURL)
	if err != nil {
		if optional {
			env.MCP.logger().Warn("MCP server down at start-up: the agent loads without its tools (optional: true)",
				"file", d.file, "field", join(at, "mcp"), "server", shown, "err", redact.Text(err.Error()))
			return nil
		}
		d.errs = append(d.errs, &Error{File: d.file, Field: join(at, "mcp"), Unavailable: true,
			Reason: fmt.Sprintf("MCP server %s is not reachable: %v (the agent is left out; set optional: true to load it without these tools)", shown, redact.Text(err.Error()))})
		return nil
	}
	byName := map[string]mcp.Remote{}
	var names []string
	for _, r := range remotes {
		byName[r.Name] = r
		names = append(names, r.Name)
	}
	sort.Strings(names)
	known := func(field string, list []string) bool {
		good := true
		for i, name := range list {
			if _, okName := byName[name]; !okName {
				d.fail(index(field, i), "server %s has no tool %q (its tools: %s)", shown, name, strings.Join(names, ", "))
				good = false
			}
		}
		return good
	}
	if allow != nil {
		if !known(join(at, "allow"), allow) {
			srv.Close()
			return nil
		}
		names = allow
	}
	needs, rules, okReq := func(string) bool { return false }, []approvalRule(nil), true
	if n := f["requires_approval"]; n != nil {
		needs, rules, okReq = d.requiresApproval(n, join(at, "requires_approval"), names, false)
	}
	idem, okIdem := d.nameSet(f["idempotent"], join(at, "idempotent"), names)
	if !okReq || !okIdem {
		srv.Close()
		return nil
	}
	out := make([]agent.BoundTool, 0, len(names))
	for _, name := range names {
		r := byName[name]
		full := prefix + "_" + name
		if !toolName.MatchString(full) {
			d.fail(join(at, "mcp"), "server %s's tool %q gives the name %q, which the model does not take (1 to 64 of a-z, A-Z, 0-9, _ and -); leave it out with allow", shown, name, full)
			continue
		}
		p := policy
		p.RequiresApproval = r.NeedsApproval()
		if f["requires_approval"] != nil {
			p.RequiresApproval = needs(name)
		}
		p.Idempotent = r.Idempotent()
		if idem != nil {
			p.Idempotent = idem(name)
		}
		if !p.RequiresApproval {
			p.ApprovalTTL = 0
		}
		out = append(out, agent.BoundTool{Tool: mcp.NewTool(srv, r, full), Policy: p})
	}
	for i := range rules {
		rules[i].rule.Tool = prefix + "_" + rules[i].rule.Tool
	}
	d.bindRules(rules, out)
	return out
}

// nameSet reads a list of names of group, or true/false for all of them.
// Absent: nil (the caller's default decides).
func (d *decoder) nameSet(n *yaml.Node, at string, group []string) (func(string) bool, bool) {
	if n == nil {
		return nil, true
	}
	n = deref(n)
	if n.Kind == yaml.ScalarNode {
		v, ok := d.boolean(n, at)
		return func(string) bool { return v }, ok
	}
	list, ok := d.stringList(n, at)
	if !ok {
		return nil, false
	}
	set := map[string]bool{}
	for i, name := range list {
		if !contains(group, name) {
			d.fail(index(at, i), "unknown tool %q: the server's tools here are %s", name, strings.Join(group, ", "))
			ok = false
		}
		set[name] = true
	}
	return func(name string) bool { return set[name] }, ok
}

// headerRefs reads an entry's headers (MCP, A2A): each value a secret
// reference (env:NAME, ssm:/path), never the secret itself.
func (d *decoder) headerRefs(n *yaml.Node, at string) (map[string]string, bool) {
	refs := map[string]string{}
	if n == nil {
		return refs, true
	}
	m := d.mapping(n, at)
	ok := m != nil
	for k, v := range m {
		ref, okRef := d.str(v, join(at, k))
		if !okRef {
			ok = false
			continue
		}
		if err := secret.Check(ref); err != nil {
			d.fail(join(at, k), "%v (a header's value is a reference, never the secret itself)", err)
			ok = false
			continue
		}
		refs[k] = ref
	}
	return refs, ok
}

// resolveHeaders resolves header references (secret.Resolver{}, env: only,
// when resolver is nil).
func (d *decoder) resolveHeaders(ctx context.Context, refs map[string]string, at string, resolver SecretResolver) (map[string]string, bool) {
	if resolver == nil {
		resolver = secret.Resolver{}
	}
	ok := true
	headers := map[string]string{}
	for k, ref := range refs {
		v, err := resolver.Resolve(ctx, ref)
		if err != nil {
			d.fail(join(at, k), "%v", err)
			ok = false
			continue
		}
		headers[k] = v
	}
	return headers, ok
}

// expandEnv replaces ${NAME} and ${NAME:-default} in s with the
// environment variable's value (the default when it is unset or empty).
// Nothing else is expanded: a $ not followed by { stays as it is.
func expandEnv(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q: ${ without its closing }", s[i:])
		}
		name, def, _ := strings.Cut(s[i+2:i+end], ":-")
		if !envName.MatchString(name) {
			return "", fmt.Errorf("${%s}: not an environment variable's name (A-Z, a-z, 0-9 and _, not starting with a digit)", s[i+2:i+end])
		}
		if v := os.Getenv(name); v != "" {
			def = v
		}
		b.WriteString(def)
		s = s[i+end+1:]
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
