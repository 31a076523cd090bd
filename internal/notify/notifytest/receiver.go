package notifytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Receiver is a webhook receiver on an httptest server that writes down,
// per request, when each delivery started and how it was answered — the
// order a recipient hears of a request's events in. It can refuse the
// first attempts of an event, and hold the first attempt of an event until
// another delivery of the same request starts (an overlap, written down in
// the request's log between the held one's start and its answer) or Hold
// passes.
type Receiver struct {
	URL string
	// Hold is how long the first attempt of HoldEvent waits for another
	// delivery of its request before it is answered.
	Hold      time.Duration
	HoldEvent string
	// Refuse answers 500 to the first Refuse[event] attempts of an event.
	Refuse map[string]int

	mu       sync.Mutex
	logs     map[string][]string // by request id
	attempts map[string]int      // by request id and event
	started  chan struct{}       // closed and replaced at each start
}

// NewReceiver starts a receiver; it stops with the test.
func NewReceiver(tb testing.TB) *Receiver {
	tb.Helper()
	r := &Receiver{Refuse: map[string]int{}, logs: map[string][]string{}, attempts: map[string]int{}, started: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	tb.Cleanup(srv.Close)
	r.URL = srv.URL + "/hooks"
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	var p struct {
		Type string `json:"type"`
		Data struct {
			RequestID string `json:"request_id"`
		} `json:"data"`
	}
	body, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(body, &p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ev, rid := strings.TrimPrefix(p.Type, "request."), p.Data.RequestID
	r.mu.Lock()
	r.logs[rid] = append(r.logs[rid], ev+" start")
	r.attempts[rid+"/"+ev]++
	n := r.attempts[rid+"/"+ev]
	refuse := n <= r.Refuse[ev]
	close(r.started)
	r.started = make(chan struct{})
	r.mu.Unlock()
	if n == 1 && ev == r.HoldEvent {
		r.holdFor(rid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if refuse {
		r.logs[rid] = append(r.logs[rid], ev+" 500")
		http.Error(w, "refused", http.StatusInternalServerError)
		return
	}
	r.logs[rid] = append(r.logs[rid], ev+" 200")
}

// holdFor waits until another delivery of the request starts, or Hold.
func (r *Receiver) holdFor(rid string) {
	deadline := time.After(r.Hold)
	for {
		r.mu.Lock()
		started, seen := r.started, len(r.logs[rid])
		r.mu.Unlock()
		select {
		case <-deadline:
			return
		case <-started:
			r.mu.Lock()
			more := len(r.logs[rid]) > seen
			r.mu.Unlock()
			if more {
				return
			}
		}
	}
}

// Log is what the request's deliveries did, in order: "<event> start",
// "<event> 200" or "<event> 500", events without their "request." prefix.
func (r *Receiver) Log(rid string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logs[rid]...)
}

// Wait waits until the request's log has n lines.
func (r *Receiver) Wait(tb testing.TB, rid string, n int) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(r.Log(rid)) < n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d lines in the log of %s, want %d: %v", len(r.Log(rid)), rid, n, r.Log(rid))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// String lists every request's log (failure messages).
func (r *Receiver) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.logs)
}
