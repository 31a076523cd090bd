package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/notify"
	"github.com/hitch-agents/hitch/internal/webhook"
)

// The Standard Webhooks specification's example.
const (
	specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTS     = 1614265330
	specBody   = `{"test": 2432232314}`
	specSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignSpecExample(t *testing.T) {
	key, err := webhook.ParseSecret(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := webhook.Sign(key, specID, time.Unix(specTS, 0), []byte(specBody)); got != specSig {
		t.Errorf("Sign = %s, want %s", got, specSig)
	}
}

func TestVerify(t *testing.T) {
	key, _ := webhook.ParseSecret(specSecret)
	at := time.Unix(specTS, 0)
	headers := func(id, ts, sig string) http.Header {
		h := http.Header{}
		for k, v := range map[string]string{webhook.HeaderID: id, webhook.HeaderTimestamp: ts, webhook.HeaderSignature: sig} {
			if v != "" {
				h.Set(k, v)
			}
		}
		return h
	}
	tests := []struct {
		name string
		h    http.Header
		body string
		now  time.Time
		want error
	}{
		{"valid", headers(specID, "1614265330", specSig), specBody, at, nil},
		{"one of several signatures", headers(specID, "1614265330", "v1,Zm9v "+specSig), specBody, at, nil},
		{"4 minutes later", headers(specID, "1614265330", specSig), specBody, at.Add(4 * time.Minute), nil},
		{"body changed", headers(specID, "1614265330", specSig), `{"test": 1}`, at, webhook.ErrSignature},
		{"id changed", headers("msg_other", "1614265330", specSig), specBody, at, webhook.ErrSignature},
		{"timestamp changed", headers(specID, "1614265331", specSig), specBody, at, webhook.ErrSignature},
		{"too old", headers(specID, "1614265330", specSig), specBody, at.Add(6 * time.Minute), webhook.ErrTimestamp},
		{"from the future", headers(specID, "1614265330", specSig), specBody, at.Add(-6 * time.Minute), webhook.ErrTimestamp},
		{"timestamp not a number", headers(specID, "soon", specSig), specBody, at, webhook.ErrTimestamp},
		{"no signature", headers(specID, "1614265330", ""), specBody, at, webhook.ErrMissingHeaders},
		{"no id", headers("", "1614265330", specSig), specBody, at, webhook.ErrMissingHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := webhook.Verify(key, tt.h, []byte(tt.body), tt.now); !errors.Is(err, tt.want) {
				t.Errorf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParseSecret(t *testing.T) {
	for _, s := range []string{"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!", "whsec_c2hvcnQ="} {
		if _, err := webhook.ParseSecret(s); err == nil {
			t.Errorf("ParseSecret(%q) accepted it", s)
		}
	}
}

// TestSendRetriedUntilAccepted: a receiver that verifies every attempt,
// answers 500 to the first, closes the connection on the second and
// accepts the third: Send reports two failures then success; the id stays,
// each attempt is signed for its own time.
func TestSendRetriedUntilAccepted(t *testing.T) {
	key, _ := webhook.ParseSecret(specSecret)
	clock := time.Now()
	var mu sync.Mutex
	var attempts []http.Header
	var bodies []webhook.Payload
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(attempts) + 1
		attempts = append(attempts, r.Header.Clone())
		mu.Unlock()
		if err := webhook.Verify(key, r.Header, body, clock); err != nil {
			t.Errorf("attempt %d does not verify: %v", n, err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		switch n {
		case 1:
			http.Error(w, "not now", http.StatusInternalServerError)
		case 2:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			var p webhook.Payload
			if err := json.Unmarshal(body, &p); err != nil {
				t.Errorf("body: %v", err)
			}
			mu.Lock()
			bodies = append(bodies, p)
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	tick := 0
	s := &webhook.Sender{Client: srv.Client(), Now: func() time.Time { tick++; return clock.Add(time.Duration(tick) * time.Second) }}
	n := agent.Notification{URL: srv.URL + "/hook", Events: agent.NotificationEvents, Secret: key}
	msg := notify.Webhook{ID: "msg_1", Type: agent.EventRequestPaused, Time: clock, Data: map[string]string{"status": "Paused"}}
	for i, wantErr := range []bool{true, true, false} {
		err := s.Send(context.Background(), n, msg)
		if (err != nil) != wantErr {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if len(attempts) != 3 {
		t.Fatalf("%d attempts", len(attempts))
	}
	for i, h := range attempts {
		if h.Get(webhook.HeaderID) != "msg_1" || h.Get("Content-Type") != "application/json" {
			t.Errorf("attempt %d headers: %v", i+1, h)
		}
		if i > 0 && h.Get(webhook.HeaderTimestamp) == attempts[i-1].Get(webhook.HeaderTimestamp) {
			t.Errorf("attempt %d kept the previous attempt's timestamp", i+1)
		}
	}
	if len(bodies) != 1 || bodies[0].Type != agent.EventRequestPaused || !strings.HasPrefix(bodies[0].Timestamp, clock.UTC().Format("2006-01-02T")) {
		t.Errorf("delivered: %+v", bodies)
	}
}

// TestSendTimesOut: a receiver that does not answer in time is a failure.
func TestSendTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s := &webhook.Sender{Client: srv.Client()}
	err := s.Send(ctx, agent.Notification{URL: srv.URL, Secret: []byte("0123456789abcdef")}, notify.Webhook{ID: "msg_2", Type: agent.EventRequestCompleted})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Send to a silent receiver = %v, want a deadline error", err)
	}
}
