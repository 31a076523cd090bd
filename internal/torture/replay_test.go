package torture

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sseEvent is one event of a stream: its id and name.
type sseEvent struct {
	ID   int64
	Name string
}

// readEvents reads a request's event stream after id `after` as a client
// does: GET …/events with Last-Event-ID, and on a cut (the stream ends
// without request_complete or error, or the connection breaks) again from
// the last id it got, up to five times. slow makes it a slow reader. It
// returns the events, how many times it reconnected, and the statuses
// that answered no stream.
func (w *worker) readEvents(proc, path string, after int64, slow bool) (evs []sseEvent, reconnects int, refused []string) {
	last := after
	for try := 0; try < 6; try++ {
		if try > 0 {
			reconnects++
			w.g.c.healthy(proc, 40*time.Second)
		}
		req, err := http.NewRequest("GET", w.g.c.procs[proc].p.URL()+path, nil)
		if err != nil {
			return evs, reconnects, append(refused, err.Error())
		}
		req.Header.Set("Authorization", "Bearer "+User)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
		resp, err := w.g.c.stream.Do(req)
		if err != nil {
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			refused = append(refused, strconv.Itoa(resp.StatusCode))
			if resp.StatusCode == http.StatusServiceUnavailable { // request_lost: reconnect
				time.Sleep(2 * time.Second)
				continue
			}
			return evs, reconnects, refused
		}
		ended := false
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		var cur sseEvent
		n := 0
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				cur.ID, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			case strings.HasPrefix(line, "event: "):
				cur.Name = strings.TrimPrefix(line, "event: ")
			case line == "" && cur.Name != "":
				evs = append(evs, cur)
				last = cur.ID
				if cur.Name == "request_complete" || cur.Name == "error" {
					ended = true
				}
				cur = sseEvent{}
				if n++; slow && n%200 == 0 {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if ended {
				break
			}
		}
		resp.Body.Close()
		if ended {
			return evs, reconnects, refused
		}
	}
	return evs, reconnects, refused
}

// replay reads an ended (or paused) request's events twice — all of them,
// then after an id in the middle, reconnecting on cuts — and records what
// the promise of a replay makes wrong (docs/api.md, Server-Sent Events):
// every event after the id once, in order, the leg's request_complete
// (or error) last, both reads agreeing; never an empty 200.
func (w *worker) replay(f *flow, agent, taskID, reqID string) {
	path := "/agents/" + agent + "/tasks/" + taskID + "/requests/" + reqID + "/events"
	slow := w.rng.IntN(2) == 0
	start := time.Now()
	full, rc1, ref1 := w.readEvents(f.proc, path, 0, slow)
	var problems []string
	check := func(what string, evs []sseEvent, after int64) {
		prev := after
		for _, e := range evs {
			if e.ID <= prev {
				problems = append(problems, fmt.Sprintf("%s: id %d (%s) after id %d", what, e.ID, e.Name, prev))
				return
			}
			prev = e.ID
		}
		if len(evs) == 0 {
			problems = append(problems, what+": no event")
		} else if last := evs[len(evs)-1].Name; last != "request_complete" && last != "error" {
			problems = append(problems, fmt.Sprintf("%s: ended with %s (id %d), not request_complete", what, last, evs[len(evs)-1].ID))
		}
	}
	if len(ref1) > 0 && len(full) == 0 {
		w.g.c.rec.Replay(Op{Worker: w.id, Flow: f.id, Kind: OpReplay, Proc: f.proc, Method: "GET", Path: path, Start: start, End: time.Now(),
			Note: "replay refused " + strings.Join(ref1, ",")})
		return
	}
	check("the replay from 0", full, 0)
	var from int64
	var part []sseEvent
	rc2 := 0
	if len(full) > 1 {
		from = full[w.rng.IntN(len(full)-1)].ID
		part, rc2, _ = w.readEvents(f.proc, path, from, !slow)
		check(fmt.Sprintf("the replay after %d", from), part, from)
		// The events after `from` of the full read are those of the
		// second read, up to the leg's end the full read stopped at.
		var want []sseEvent
		for _, e := range full {
			if e.ID > from {
				want = append(want, e)
			}
		}
		n := min(len(want), len(part))
		for i := 0; i < n; i++ {
			if want[i] != part[i] {
				problems = append(problems, fmt.Sprintf("the replays disagree after %d: event %d is %d %s in one and %d %s in the other",
					from, i, want[i].ID, want[i].Name, part[i].ID, part[i].Name))
				break
			}
		}
		if len(part) < len(want) {
			problems = append(problems, fmt.Sprintf("the replay after %d holds %d events, the full one %d after that id", from, len(part), len(want)))
		}
	}
	w.g.c.rec.Replay(Op{Worker: w.id, Flow: f.id, Kind: OpReplay, Proc: f.proc, Method: "GET", Path: path, Start: start, End: time.Now(), Status: 200,
		Note:    fmt.Sprintf("replay: %d events, then %d after %d; %d reconnects; slow %v", len(full), len(part), from, rc1+rc2, slow),
		Problem: strings.Join(problems, "; "), Events: len(full)})
}
