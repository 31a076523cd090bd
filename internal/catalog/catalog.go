package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/tools"
)

// Defaults of a tool entry's policy.
const (
	DefaultApprovalTTL = 24 * time.Hour
	DefaultToolTimeout = 60 * time.Second
)

// Env is what the tools need from where the agents run.
type Env struct {
	// Files tells whether the files tools work (hitch serve). When false
	// (Lambda) every files call fails with tools.ErrFilesUnavailable.
	Files bool
	// BaseDir is the directory on disk that the loaded FS's root stands for:
	// a files root (config.root) is relative to the agent file's directory,
	// that is BaseDir joined with the file's directory in the FS. Empty: the
	// current directory. LoadDir sets it.
	BaseDir string
	// Lambda invokes lambda tools; a definition with a lambda tool fails to
	// load without it.
	Lambda tools.LambdaInvoker
	// Now is get_time's clock; time.Now when nil.
	Now func() time.Time
	// MCP is what MCP entries need: secrets for headers, an HTTP client,
	// a log for optional servers that are down (mcp.go).
	MCP MCPEnv
	// S3Files, when set, keeps a files group whose config.s3 names an S3
	// location there (internal/s3files), Files or not: files on S3 work on
	// Lambda.
	S3Files func(bucket, prefix string) tools.FileStore
	// S3 reads the objects a Lambda tool names as its artifacts (under its
	// entry's artifacts_from); nil: such an entry fails to load.
	S3 tools.S3Getter
	// Artifacts is where Hitch keeps artifacts' bytes: s3://bucket/prefix
	// (HITCH_ARTIFACTS, --artifacts s3://…) or a directory (--artifacts
	// DIR); "" for none or in memory. artifacts_from may not overlap it,
	// nor a files root hold it (storage.go).
	Artifacts string
	// LoopbackWebhooks allows webhooks over http to a loopback receiver
	// (`hitch serve`); everywhere else a webhook URL is https.
	LoopbackWebhooks bool
}

// Catalog is the set of agents deployed.
type Catalog struct {
	byName map[string]*agent.Agent
	list   []*agent.Agent
}

// Load reads every dir/*.yaml of fsys (dir "." for the root) and binds the
// agents' tools. It fails if a definition is invalid, if two files define
// the same agent, or if there is no definition at all.
func Load(fsys fs.FS, dir string, env Env) (*Catalog, error) {
	return load(fsys, dir, env, func(p string) string { return p })
}

// LoadDir loads the definitions of a directory on disk (hitch serve
// --agents DIR); files roots are relative to it unless env.BaseDir is set.
func LoadDir(dir string, env Env) (*Catalog, error) {
	if env.BaseDir == "" {
		env.BaseDir = dir
	}
	return load(os.DirFS(dir), ".", env, func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) })
}

func load(fsys fs.FS, dir string, env Env, display func(string) string) (*Catalog, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("catalog: list %s: %w", display(dir), err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("catalog: no agent definitions (*.yaml) in %s", display(dir))
	}
	c := &Catalog{byName: map[string]*agent.Agent{}}
	definedIn := map[string]string{}
	ps := &places{}
	var errs, skipped []error
	for _, name := range names {
		file := display(name)
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
		a, err := parse(file, data, env, path.Dir(name), ps)
		if err != nil && onlyUnavailable(err) {
			skipped = append(skipped, err)
			env.MCP.logger().Error("an agent is left out: what it needs is not reachable", "file", file, "err", err.Error())
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, ok := definedIn[a.Name]; ok {
			errs = append(errs, &Error{File: file, Field: "name", Reason: fmt.Sprintf("agent %q is already defined in %s", a.Name, prev)})
			continue
		}
		definedIn[a.Name] = file
		c.byName[a.Name] = a
		c.list = append(c.list, a)
	}
	if len(errs) == 0 {
		errs = ps.check()
	}
	if len(errs) == 0 {
		errs = link(c, definedIn)
	}
	if len(errs) > 0 {
		return nil, errors.Join(append(errs, skipped...)...)
	}
	if len(c.list) == 0 && len(skipped) > 0 {
		return nil, errors.Join(skipped...)
	}
	slices.SortFunc(c.list, func(a, b *agent.Agent) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

// link binds agents called as tools (docs/architecture.md): each must be an agent of
// the deployment; its description is the tool's unless the entry gives
// one; no agent may reach itself, and no chain of calls may be deeper than
// agent.MaxAgentDepth. Errors name the file and the field.
func link(c *Catalog, definedIn map[string]string) []error {
	var errs []error
	for _, a := range c.list {
		for _, bt := range a.Tools {
			at, ok := bt.Tool.(*agent.AgentTool)
			if !ok || at.Remote != nil {
				continue // a remote agent: its system's own
			}
			sub, ok := c.byName[at.Agent]
			if !ok {
				errs = append(errs, &Error{File: definedIn[a.Name], Field: at.DefinedAt, Reason: fmt.Sprintf("no agent is named %q in this deployment", at.Agent)})
				continue
			}
			if at.Description == "" {
				at.Description = sub.Description
				if at.Description == "" {
					at.Description = "The agent " + sub.Name + "."
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	// depth[name]: the longest chain of agent calls below the agent.
	depth := map[string]int{}
	const visiting = -1
	var walk func(a *agent.Agent, path []string) (int, error)
	walk = func(a *agent.Agent, path []string) (int, error) {
		switch d, ok := depth[a.Name]; {
		case ok && d == visiting:
			return 0, nil // reported by the caller that closed the cycle
		case ok:
			return d, nil
		}
		depth[a.Name] = visiting
		best := 0
		for _, bt := range a.Tools {
			at, ok := bt.Tool.(*agent.AgentTool)
			if !ok || at.Remote != nil {
				continue
			}
			if d, seen := depth[at.Agent]; seen && d == visiting {
				cycle := append(slices.Clone(path[slices.Index(path, at.Agent):]), at.Agent)
				return 0, &Error{File: definedIn[a.Name], Field: at.DefinedAt, Reason: "agents call each other in a cycle: " + strings.Join(cycle, " → ")}
			}
			d, err := walk(c.byName[at.Agent], append(path, at.Agent))
			if err != nil {
				return 0, err
			}
			if d+1 > agent.MaxAgentDepth {
				return 0, &Error{File: definedIn[a.Name], Field: at.DefinedAt, Reason: fmt.Sprintf("calling %s nests agents %d deep; at most %d levels of agents may be called below an agent", at.Agent, d+1, agent.MaxAgentDepth)}
			}
			best = max(best, d+1)
		}
		depth[a.Name] = best
		return best, nil
	}
	for _, a := range c.list {
		if _, err := walk(a, []string{a.Name}); err != nil {
			return []error{err}
		}
	}
	return nil
}

// onlyUnavailable tells whether every problem in err is an Unavailable one.
func onlyUnavailable(err error) bool {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	for _, e := range list {
		var ce *Error
		if !errors.As(e, &ce) || !ce.Unavailable {
			return false
		}
	}
	return len(list) > 0
}

// Get finds an agent by name.
func (c *Catalog) Get(name string) (*agent.Agent, bool) {
	a, ok := c.byName[name]
	return a, ok
}

// List returns the agents sorted by name.
func (c *Catalog) List() []*agent.Agent { return slices.Clone(c.list) }

// Error is a definition's problem: the file, the field path
// (spec.agent.tools[1].approval_ttl; empty for the file as a whole) and why.
type Error struct {
	File   string
	Field  string
	Reason string
	// Unavailable: the definition is valid but something it needs was not
	// reachable at start-up (an MCP server). Such an agent is left out and
	// the others load.
	Unavailable bool
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Reason
	}
	return e.File + ": " + e.Field + ": " + e.Reason
}
