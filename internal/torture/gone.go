package torture

import (
	"encoding/json"
	"strings"
	"time"
)

// A remote gone for good (DESIGN's "A remote that never answers";
// docs/api.md, "Remote agents"): A's agent gmid reaches B's leaf through a
// relay in the test process which, at a random moment of the load, goes
// away for good — from then on it reads each request and closes the
// connection (the message may have landed), never forwarding it. The
// caller's request must end within GoneBound of that moment, each call
// the relay read must have the remote's real result or outcome_unknown
// (never "not run"), and a call closed outcome_unknown must have had its
// remote-cancel attempted (its message sent again, without streaming).

// GoneAgent is A's agent whose remote goes away for good.
const GoneAgent = "gmid"

// GoneChain is its chain: gmid → B's leaf, through the relay.
var GoneChain = Chain{Proc: ProcA, Agents: []string{GoneAgent, "leaf"}, Remote: 1}

// Gone is what the relay in front of gmid's remote saw: when it went away
// (zero: it never did) and each request it read from then on.
type Gone struct {
	At    time.Time  `json:"at"`
	Reads []GoneRead `json:"reads"`
	// Bound is how long after At a caller may still run: request_timeout,
	// a lease, a sweep and a margin for load.
	Bound time.Duration `json:"bound"`
}

// GoneRead is a request the gone relay read and dropped: its JSON-RPC
// method and, for a message, its text (a call's message: the link to it).
type GoneRead struct {
	At      time.Time `json:"at"`
	Method  string    `json:"method"`
	Message string    `json:"message"`
}

// ParseGoneRead reads a JSON-RPC request body as the relay records it.
func ParseGoneRead(at time.Time, body []byte) GoneRead {
	var v struct {
		Method string `json:"method"`
		Params struct {
			Message struct {
				Parts []json.RawMessage `json:"parts"`
			} `json:"message"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &v)
	var texts []string
	for _, p := range v.Params.Message.Parts {
		var part struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(p, &part) == nil && part.Text != "" {
			texts = append(texts, part.Text)
		}
	}
	return GoneRead{At: at, Method: v.Method, Message: strings.Join(texts, "")}
}

// goneCalls are gmid's calls whose message the relay read after it went
// away, with those reads.
func goneCalls(g *Gone, w *World) map[*Call][]GoneRead {
	out := map[*Call][]GoneRead{}
	if g == nil || g.At.IsZero() {
		return out
	}
	byMsg := map[string][]GoneRead{}
	for _, rd := range g.Reads {
		if rd.Message != "" && !rd.At.Before(g.At) {
			byMsg[rd.Message] = append(byMsg[rd.Message], rd)
		}
	}
	for _, r := range w.Order {
		if r.Agent != GoneAgent || r.Proc != ProcA {
			continue
		}
		for _, cl := range r.Calls {
			if reads := byMsg[cl.Message]; cl.Message != "" && len(reads) > 0 {
				out[cl] = reads
			}
		}
	}
	return out
}

// remoteGone holds gmid's requests whose remote went away to the bound,
// their calls to "the remote's result or outcome_unknown", and a call
// closed outcome_unknown to its remote-cancel.
func (c *checker) remoteGone() {
	g := c.in.Gone
	calls := goneCalls(g, c.w)
	hit := map[*Req]bool{}
	for _, r := range c.w.Order {
		for _, cl := range r.Calls {
			reads, ok := calls[cl]
			if !ok {
				continue
			}
			hit[r] = true
			hasChild := false
			for _, ch := range r.Children {
				if ch.ParentCall == cl.ID {
					hasChild = true
				}
			}
			unknown := cl.Result != nil && strings.Contains(cl.ResultText, "outcome_unknown")
			switch {
			case cl.Result == nil || hasChild:
				// Open (the bound below holds the request), or the
				// remote's task exists: its result is held to it as any
				// remote call's is (invariant 4).
			case !unknown:
				c.add(4, []string{r.ID}, c.ridOps[r.ID], nil,
					"%s's call %s reached its remote's relay after the remote went away for good (%s; the message may have landed), but its result is %q, not outcome_unknown",
					r.Agent, cl.ID, g.At.Format(time.RFC3339Nano), clip(cl.ResultText, 160))
			default:
				cancel := false
				for _, rd := range reads {
					if rd.Method == "SendMessage" {
						cancel = true
					}
				}
				if !cancel {
					c.add(6, []string{r.ID}, c.ridOps[r.ID], nil,
						"%s's call %s was closed outcome_unknown after its remote went away, but no remote-cancel was attempted (its message never sent again to cancel what it made)",
						r.Agent, cl.ID)
				}
			}
		}
	}
	for _, r := range c.w.Order {
		if !hit[r] {
			continue
		}
		var rq *Request
		for i := range r.Task.Requests {
			if r.Task.Requests[i].RequestID == r.ID {
				rq = &r.Task.Requests[i]
			}
		}
		if rq == nil {
			continue
		}
		from := g.At
		if rq.CreatedAt.After(from) {
			from = rq.CreatedAt
		}
		switch {
		case rq.Status == "Running":
			c.add(6, []string{r.ID}, c.ridOps[r.ID], nil,
				"%s's request is still Running, its remote gone for good since %s (the bound is %s)", r.Agent, g.At.Format(time.RFC3339Nano), g.Bound)
		case rq.UpdatedAt.Sub(from) > g.Bound:
			c.add(6, []string{r.ID}, c.ridOps[r.ID], nil,
				"%s's request ended %s after its remote went away for good (or it started), beyond the bound %s",
				r.Agent, rq.UpdatedAt.Sub(from).Round(time.Millisecond), g.Bound)
		}
	}
}

// goneShapes counts the shape for the report: gmid's calls read by the
// relay after their remote went away.
func goneShapes(in Input, w *World) map[string]int {
	m := map[string]int{}
	if n := len(goneCalls(in.Gone, w)); n > 0 {
		m["remotes gone (calls sent after)"] = n
	}
	return m
}
