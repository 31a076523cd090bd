package torture

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hitch-agents/hitch/internal/a2a/a2atest"
)

// goneBound is the bound a caller whose remote went away is held to
// (gone.go): the processes' --request-timeout (cluster_test.go), a lease,
// a sweep, and a margin for the load of two processes on two cores.
const goneBound = 2*time.Minute + 15*time.Second + 5*time.Second + 30*time.Second

// goneRelay stands between A's gmid and B: it forwards each request (read
// whole first, a2atest.Relay) until it goes away for good; from then on
// it reads each request, records it and closes the connection.
type goneRelay struct {
	relay a2atest.Relay
	mu    sync.Mutex
	at    time.Time
	reads []GoneRead
}

func newGoneRelay(to string) *goneRelay { return &goneRelay{relay: a2atest.Relay{To: to}} }

func (g *goneRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	gone := !g.at.IsZero()
	g.mu.Unlock()
	if !gone {
		g.relay.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	rd := ParseGoneRead(time.Now(), body)
	g.mu.Lock()
	g.reads = append(g.reads, rd)
	g.mu.Unlock()
	panic(http.ErrAbortHandler) // read, then the connection closes
}

// goAway makes the relay go away for good.
func (g *goneRelay) goAway() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.at.IsZero() {
		g.at = time.Now()
	}
}

// state is what the relay saw, for the checker.
func (g *goneRelay) state() *Gone {
	g.mu.Lock()
	defer g.mu.Unlock()
	return &Gone{At: g.at, Reads: append([]GoneRead(nil), g.reads...), Bound: goneBound}
}

// goneDefinition is gmid: B's leaf as its tool, reached through the relay.
func goneDefinition(relay, hook string) string {
	return fmt.Sprintf(agentHead, GoneAgent, "Hands work to the leaf of the other system, through a relay that goes away.") +
		fmt.Sprintf(`      - agent: leaf
        a2a: %s/a2a/leaf
        headers: {Authorization: env:HITCH_REMOTE_TOKEN}
`, strings.TrimRight(relay, "/")) + fmt.Sprintf(notifications, hook)
}

// goneFlows sends gmid a message (a peek on B's leaf, which needs no
// decision) every second or two until the load ends, each followed until
// it is not Running; at a random moment between a quarter and three
// quarters of the load, the relay goes away for good.
func (g *generator) goneFlows() {
	rng := rand.New(rand.NewPCG(g.seed, 0x676f6e65))
	span := time.Until(g.deadline)
	if span <= 0 {
		return
	}
	awayAt := time.Now().Add(span/4 + time.Duration(rng.Int64N(int64(span/2)+1)))
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 0; time.Now().Before(g.deadline); i++ {
		if time.Now().After(awayAt) {
			g.c.gone.goAway()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{g: g, id: 2000 + i, rng: rand.New(rand.NewPCG(g.seed, uint64(2000+i)))}
			f := &flow{id: int(g.flows.Add(1)), chain: GoneChain}
			f.proc, f.agent = f.chain.Proc, f.chain.Agents[0]
			tag := fmt.Sprintf("t%d", g.tags.Add(1))
			in := fmt.Sprintf(`{"tag":%q,"v":%q}`, tag, "v"+tag)
			res := w.send(f, OpInvoke, "/agents/"+f.agent+"/invoke", itemsBody("", message(f.chain, "/call fx_peek "+in)))
			if res == nil {
				return
			}
			f.taskID, f.reqID = res.TaskID, res.RequestID
			w.settle(f)
		}()
		time.Sleep(time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
	}
}
