// Package a2atest holds what tests of A2A between two Hitch systems share.
package a2atest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
)

// Relay stands between a caller and a remote A2A agent: it forwards each
// call to To, reading the request whole before forwarding it, and the
// remote's whole answer back. Hold, when set, runs for each message sent
// (SendMessage, SendStreamingMessage) once the remote answered it, with the
// message's number (from 1) and the caller's request context: it may wait,
// and false drops the answer (the caller never gets it). Refuse, when set,
// is asked about every call's body first: true answers 503 without
// forwarding (the remote unreachable for that call). Answer, when set, may
// answer a call itself (a JSON-RPC response, as an agent that does not do
// what was asked would).
type Relay struct {
	To     string
	Hold   func(ctx context.Context, n int) bool
	Refuse func(body []byte) bool
	Answer func(body []byte) []byte
	sent   atomic.Int32
}

// Sent is how many messages went through to the remote.
func (r *Relay) Sent() int { return int(r.sent.Load()) }

// ServeHTTP implements http.Handler.
func (r *Relay) ServeHTTP(w http.ResponseWriter, in *http.Request) {
	body, err := io.ReadAll(in.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if r.Refuse != nil && r.Refuse(body) {
		http.Error(w, "refused by the relay", http.StatusServiceUnavailable)
		return
	}
	if r.Answer != nil {
		if out := r.Answer(body); out != nil {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(out)
			return
		}
	}
	req, err := http.NewRequestWithContext(in.Context(), in.Method, r.To+in.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = in.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if bytes.Contains(body, []byte(`"SendStreamingMessage"`)) || bytes.Contains(body, []byte(`"SendMessage"`)) {
		n := int(r.sent.Add(1))
		if r.Hold != nil && !r.Hold(in.Context(), n) {
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}
