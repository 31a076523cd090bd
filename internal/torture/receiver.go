package torture

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hitch-agents/hitch/internal/webhook"
)

// Receiver is a webhook receiver: it verifies each delivery (Standard
// Webhooks), records it, and refuses some attempts at random (500) so that
// retries and their order are exercised. The path's last element names the
// process the webhook came from (…/hooks/A).
type Receiver struct {
	key []byte
	// Refuse is the share of attempts answered 500.
	Refuse float64

	mu   sync.Mutex
	rand *rand.Rand
	got  []Delivery
}

// NewReceiver makes a receiver for webhooks signed with secret; its
// refusals follow seed.
func NewReceiver(secret string, seed uint64, refuse float64) (*Receiver, error) {
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		return nil, err
	}
	return &Receiver{key: key, Refuse: refuse, rand: rand.New(rand.NewPCG(seed, 0x686f6f6b))}, nil
}

// Deliveries returns the attempts received, in the order they started.
func (rc *Receiver) Deliveries() []Delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Delivery(nil), rc.got...)
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := Delivery{Start: time.Now(), Proc: r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:], ID: r.Header.Get(webhook.HeaderID)}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		d.Problem = "read: " + err.Error()
	}
	if err := webhook.Verify(rc.key, r.Header, body, time.Now()); err != nil {
		d.Problem = "signature: " + err.Error()
	} else {
		d.Verified = true
	}
	var p struct {
		Type string `json:"type"`
		Data struct {
			TaskID    string `json:"task_id"`
			RequestID string `json:"request_id"`
			Status    string `json:"status"`
			Round     int    `json:"round"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil && d.Problem == "" {
		d.Problem = "body: " + err.Error()
	}
	d.Type, d.TaskID, d.RequestID, d.Status, d.Round = p.Type, p.Data.TaskID, p.Data.RequestID, p.Data.Status, p.Data.Round
	rc.mu.Lock()
	refuse := rc.rand.Float64() < rc.Refuse
	i := len(rc.got)
	rc.got = append(rc.got, d)
	rc.mu.Unlock()
	code := http.StatusNoContent
	switch {
	case !d.Verified:
		code = http.StatusUnauthorized
	case refuse:
		code = http.StatusInternalServerError
	}
	w.WriteHeader(code)
	rc.mu.Lock()
	rc.got[i].Code, rc.got[i].End = code, time.Now()
	rc.mu.Unlock()
}
