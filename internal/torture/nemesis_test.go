package torture

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// nemesis injects faults, one at a time, until the deadline; each fault is
// over (the process back, answering) when it returns.
type nemesis struct {
	c        *cluster
	rng      *rand.Rand
	deadline time.Time
	// armed counts relay kills armed that no call met in time.
	armed int
	// stall is how long a process stays stopped: past its 15 s lease.
	stall time.Duration
}

func (n *nemesis) run() {
	for {
		wait := time.Duration(2000+n.rng.IntN(5000)) * time.Millisecond
		if time.Now().Add(wait).After(n.deadline) {
			return
		}
		time.Sleep(wait)
		name := []string{ProcA, ProcB}[n.rng.IntN(2)]
		kinds := map[string]int{FaultKillBefore: 25, FaultKillAfter: 25, FaultKill: 15, FaultStallCont: 12, FaultStallKill: 8, FaultRestart: 10, FaultRestartWithout: 5}
		keys := sortedKeys(kinds)
		total := 0
		for _, k := range keys {
			total += kinds[k]
		}
		pick, kind := n.rng.IntN(total), keys[len(keys)-1]
		for _, k := range keys {
			if pick < kinds[k] {
				kind = k
				break
			}
			pick -= kinds[k]
		}
		n.fault(name, kind)
	}
}

func (n *nemesis) restart(p *proc, f *Fault) {
	if err := p.p.Start(60 * time.Second); err != nil {
		n.c.t.Errorf("restart %s after %s: %v", p.name, f.Kind, err)
	}
	f.End = time.Now()
	n.c.rec.AddFault(*f)
}

func (n *nemesis) fault(name, kind string) {
	p := n.c.procs[name]
	f := &Fault{Kind: kind, Proc: name}
	switch kind {
	case FaultKillBefore, FaultKillAfter:
		var once sync.Once
		fired := make(chan struct{})
		var at time.Time
		p.relay.Arm(1+n.rng.IntN(40), kind == FaultKillAfter, func() {
			once.Do(func() {
				at = time.Now()
				p.p.Signal(syscall.SIGKILL)
				close(fired)
			})
		})
		select {
		case <-fired:
		case <-time.After(10 * time.Second):
		}
		f.At = p.relay.Disarm()
		if f.At == "" {
			n.armed++
			return
		}
		<-fired
		<-p.p.Done()
		f.Start = at
		time.Sleep(time.Duration(n.rng.IntN(1000)) * time.Millisecond)
		n.restart(p, f)
	case FaultKill:
		f.Start = time.Now()
		p.p.Kill()
		n.restart(p, f)
	case FaultRestart:
		f.Start = time.Now()
		p.p.Terminate(10 * time.Second)
		n.restart(p, f)
	case FaultRestartWithout:
		// Only an agent no other definition of the process names can be
		// left out (a missing agent tool is a start-up error).
		left := []string{"top", "duo", "xtop", "rduo"}[n.rng.IntN(4)]
		if name == ProcB {
			left = []string{"top", "duo"}[n.rng.IntN(2)]
		}
		file := filepath.Join(p.dir, left+".yaml")
		aside := filepath.Join(filepath.Dir(p.dir), p.name+"-"+left+".yaml.aside")
		f.At = left
		f.Start = time.Now()
		p.p.Terminate(10 * time.Second)
		if err := os.Rename(file, aside); err != nil {
			n.c.t.Errorf("leave out %s: %v", left, err)
		}
		if err := p.p.Start(60 * time.Second); err != nil {
			n.c.t.Errorf("restart %s without %s: %v", p.name, left, err)
		}
		time.Sleep(time.Duration(3000+n.rng.IntN(7000)) * time.Millisecond)
		p.p.Terminate(10 * time.Second)
		if err := os.Rename(aside, file); err != nil {
			n.c.t.Errorf("put back %s: %v", left, err)
		}
		n.restart(p, f)
	case FaultStallCont, FaultStallKill:
		var once sync.Once
		stopped := make(chan struct{})
		stop := func(at string) func() {
			return func() {
				once.Do(func() {
					f.At, f.Start = at, time.Now()
					if err := p.p.Stop(); err != nil {
						n.c.t.Errorf("stop %s: %v", name, err)
					}
					close(stopped)
				})
			}
		}
		if n.rng.IntN(2) == 0 {
			// Stopped right after a write landed (a claim, a commit), before
			// its answer reaches the process: a holder frozen mid-leg.
			p.relay.ArmStall("TransactWriteItems", stop("TransactWriteItems"))
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
			}
			p.relay.ArmStall("", nil)
		}
		stop("")()
		<-stopped
		time.Sleep(n.stall)
		if kind == FaultStallCont {
			p.p.Cont()
			f.End = time.Now()
			n.c.rec.AddFault(*f)
			return
		}
		p.p.Kill()
		n.restart(p, f)
	}
}
