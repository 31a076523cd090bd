package chaos

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Relay forwards DynamoDB calls to DynamoDB Local, counting them; armed, it
// calls kill at the k-th call, before forwarding it or after its answer,
// and drops that call's connection.
type Relay struct {
	target string
	client *http.Client

	mu     sync.Mutex
	count  int
	total  int
	k      int
	after  bool
	kill   func()
	killed string // the operation of the call the kill came at
	// stall, when set, runs once the first call of operation stallOp has
	// landed, before its answer is delivered (a SIGSTOP of the server).
	stallOp string
	stall   func()
}

// NewRelay relays to the DynamoDB endpoint target.
func NewRelay(target string) *Relay {
	return &Relay{target: strings.TrimRight(target, "/"), client: &http.Client{}}
}

// ArmStall makes the next call of op, once it has landed, run fn before its
// answer goes back.
func (r *Relay) ArmStall(op string, fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stallOp, r.stall = op, fn
}

// Arm makes the k-th call from now kill the server: before it is forwarded
// (the call does not land) or, with after, once DynamoDB answered it (it
// landed, and its answer never reaches the server).
func (r *Relay) Arm(k int, after bool, kill func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count, r.k, r.after, r.kill, r.killed = 0, k, after, kill, ""
}

// Disarm stops the kill and tells at which operation it came ("" if none).
func (r *Relay) Disarm() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kill = nil
	return r.killed
}

// Calls is how many calls the relay counted in all (the stream's polls
// are not counted).
func (r *Relay) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	// The body is read in full before the call goes on: a relay that hands
	// the inbound body to the transport cuts some streamed answers.
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "relay: read", http.StatusBadGateway)
		return
	}
	target := req.Header.Get("X-Amz-Target")
	op := strings.TrimPrefix(target, "DynamoDB_20120810.")
	// The stream's polls (the in-process dispatcher's background reads)
	// are relayed but not counted: the kills land in the requests' calls.
	polled := strings.HasPrefix(target, "DynamoDBStreams_")
	r.mu.Lock()
	if !polled {
		r.count++
		r.total++
	}
	var kill func()
	if r.kill != nil && !polled && r.count == r.k {
		kill, r.kill, r.killed = r.kill, nil, op
	}
	after := r.after
	var stall func()
	if r.stall != nil && op == r.stallOp {
		stall, r.stall = r.stall, nil
	}
	r.mu.Unlock()
	if kill != nil && !after {
		kill()
		abort(w)
		return
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, r.target+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "relay: request", http.StatusBadGateway)
		return
	}
	out.Header = req.Header.Clone()
	resp, err := r.client.Do(out)
	if err != nil {
		abort(w)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if kill != nil {
		kill() // the call landed; its answer never reaches the server
		abort(w)
		return
	}
	if stall != nil {
		stall()
	}
	if err != nil {
		abort(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// abort drops the connection without an answer.
func abort(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
