// Package webhook sends and verifies webhooks in the Standard Webhooks
// format (https://www.standardwebhooks.com; docs/architecture.md): a JSON POST with
// the headers webhook-id (stable across attempts: receivers deduplicate on
// it), webhook-timestamp (each attempt's, in epoch seconds) and
// webhook-signature ("v1,<base64 HMAC-SHA256(key, id.timestamp.body)>",
// signed anew at each attempt). Secrets are "whsec_<base64 key>".
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/notify"
)

// Headers of a webhook.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret.
const SecretPrefix = "whsec_"

// Tolerance is how far a webhook's timestamp may be from the receiver's
// clock, either way (replays of old deliveries are refused).
const Tolerance = 5 * time.Minute

// Timeout bounds one delivery attempt.
const Timeout = 10 * time.Second

// ParseSecret returns the HMAC key of a "whsec_<base64>" secret.
func ParseSecret(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("a webhook secret starts with %q", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("a webhook secret is %s followed by base64: %v", SecretPrefix, err)
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("a webhook secret's key must have at least 16 bytes, it has %d", len(key))
	}
	return key, nil
}

// Sign is the webhook-signature of a message: "v1,<base64 HMAC-SHA256>".
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts.Unix())
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Errors of Verify.
var (
	ErrMissingHeaders = errors.New("webhook: the webhook-id, webhook-timestamp or webhook-signature header is missing")
	ErrTimestamp      = errors.New("webhook: the timestamp is too far from now (over 5 minutes) or not a number")
	ErrSignature      = errors.New("webhook: no signature matches")
)

// Verify checks a received webhook: its headers, its timestamp within
// Tolerance of now, and one of its space-separated signatures.
func Verify(key []byte, h http.Header, body []byte, now time.Time) error {
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	sec, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > Tolerance || d < -Tolerance {
		return ErrTimestamp
	}
	want := Sign(key, id, ts, body)
	for _, sig := range strings.Fields(sigs) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return ErrSignature
}

// Payload is a webhook's body (docs/architecture.md).
type Payload struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// Sender posts webhooks: notify.WebhookSender.
type Sender struct {
	// Client sends; its Timeout, if any, applies on top of Timeout.
	Client *http.Client
	// Now is the clock of the timestamps (time.Now when nil).
	Now func() time.Time
}

var _ notify.WebhookSender = (*Sender)(nil)

// Send makes one attempt: POST the payload, signed for this attempt, and
// wait at most Timeout for a 2xx. Any other answer, a timeout or a closed
// connection is an error (the dispatcher retries).
func (s *Sender) Send(ctx context.Context, n agent.Notification, msg notify.Webhook) error {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	body, err := json.Marshal(Payload{Type: msg.Type, Timestamp: msg.Time.UTC().Format(time.RFC3339), Data: msg.Data})
	if err != nil {
		return fmt.Errorf("webhook: encode %s: %w", msg.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Hitch-Webhooks/1")
	req.Header.Set(HeaderID, msg.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign(n.Secret, msg.ID, now, body))
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s to %s: %w", msg.ID, n.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook %s to %s: the receiver answered %s", msg.ID, n.URL, resp.Status)
	}
	return nil
}
