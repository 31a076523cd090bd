package torture

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/webhook"
)

func TestReceiver(t *testing.T) {
	rc, err := NewReceiver(WebhookSecret, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	key, _ := webhook.ParseSecret(WebhookSecret)
	body := `{"type":"request.paused","data":{"task_id":"t","request_id":"r","status":"Paused","round":2}}`
	send := func(sig string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/hooks/B", strings.NewReader(body))
		now := time.Now()
		req.Header.Set(webhook.HeaderID, "msg_1")
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		if sig == "" {
			sig = webhook.Sign(key, "msg_1", now, []byte(body))
		}
		req.Header.Set(webhook.HeaderSignature, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send(""); code != http.StatusNoContent {
		t.Errorf("a signed delivery: %d, want 204", code)
	}
	if code := send("v1,bm90IGEgc2lnbmF0dXJl"); code != http.StatusUnauthorized {
		t.Errorf("a forged delivery: %d, want 401", code)
	}
	got := rc.Deliveries()
	if len(got) != 2 {
		t.Fatalf("%d deliveries recorded, want 2", len(got))
	}
	d := got[0]
	if !d.Verified || !d.Accepted() || d.Proc != "B" || d.ID != "msg_1" || d.Type != "request.paused" || d.RequestID != "r" || d.Round != 2 {
		t.Errorf("the signed delivery: %+v", d)
	}
	if got[1].Verified || got[1].Accepted() || got[1].Problem == "" {
		t.Errorf("the forged delivery: %+v", got[1])
	}
}
