package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/catalog"
	"github.com/hitch-agents/hitch/internal/secret"
)

const goodSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// refs resolves ssm: references from a map, env: ones from the
// environment (the catalog's own interface; internal/secret tests the SSM
// client).
type refs map[string]string

func (r refs) Resolve(ctx context.Context, ref string) (string, error) {
	if v, ok := r[ref]; ok {
		return v, nil
	}
	if strings.HasPrefix(ref, "env:") {
		return secret.Resolver{}.Resolve(ctx, ref)
	}
	return "", errors.New("parameter " + ref + " not found")
}

func withNotifications(list string) string {
	return minimal + "  notifications:\n" + list
}

func TestNotifications(t *testing.T) {
	t.Setenv("HITCH_TEST_WEBHOOK_SECRET", goodSecret)
	def := withNotifications(`    - url: https://hooks.example.com/hitch
      events: [request.paused, request.completed]
      secret: env:HITCH_TEST_WEBHOOK_SECRET
    - url: http://127.0.0.1:9000/hook
      events: [request.failed, request.canceled]
      secret: ssm:/hitch/webhook
`)
	a, err := loadOne(t, def, catalog.Env{LoopbackWebhooks: true, MCP: catalog.MCPEnv{Secrets: refs{"ssm:/hitch/webhook": goodSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range a.Notifications {
		got = append(got, fmt.Sprintf("%s %s key:%d bytes", n.URL, strings.Join(n.Events, ","), len(n.Secret)))
	}
	want := []string{"https://hooks.example.com/hitch request.paused,request.completed key:24 bytes",
		"http://127.0.0.1:9000/hook request.failed,request.canceled key:24 bytes"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	if !a.Notifications[0].Wants(agent.EventRequestPaused) || a.Notifications[0].Wants(agent.EventRequestFailed) {
		t.Errorf("Wants: %+v", a.Notifications[0])
	}
}

func TestNotificationErrors(t *testing.T) {
	t.Setenv("HITCH_TEST_WEBHOOK_SECRET", goodSecret)
	t.Setenv("HITCH_TEST_PLAIN", "not-a-whsec")
	const f = "agents/a.yaml: spec.notifications[0]"
	entry := func(url, events, secret string) string {
		return withNotifications("    - url: " + url + "\n      events: " + events + "\n      secret: " + secret + "\n")
	}
	ok := "env:HITCH_TEST_WEBHOOK_SECRET"
	tests := []struct {
		name     string
		def      string
		loopback bool
		want     []string
	}{
		{"http to a host", entry("http://hooks.example.com/x", "[request.paused]", ok), true,
			[]string{f + `.url: "http://hooks.example.com/x": a webhook URL must be https (http only to 127.0.0.1, ::1 or localhost under hitch serve)`}},
		{"http to loopback on Lambda", entry("http://127.0.0.1:9000/x", "[request.paused]", ok), false,
			[]string{f + `.url: "http://127.0.0.1:9000/x": http is allowed only for a loopback receiver under hitch serve; use https`}},
		{"not a URL", entry("hooks", "[request.paused]", ok), true,
			[]string{f + `.url: "hooks" is not an absolute URL without credentials`}},
		{"credentials in the URL", entry("https://u:p@hooks.example.com/x", "[request.paused]", ok), true,
			[]string{f + `.url: "https://u:p@hooks.example.com/x" is not an absolute URL without credentials`}},
		{"unknown event", entry("https://h.example.com", "[request.paused, task.deleted]", ok), true,
			[]string{f + `.events[1]: unknown event "task.deleted": want one of request.paused, request.completed, request.failed, request.canceled`}},
		{"no events", entry("https://h.example.com", "[]", ok), true,
			[]string{f + `.events: must name at least one event (request.paused, request.completed, request.failed, request.canceled)`}},
		{"a secret given inline", entry("https://h.example.com", "[request.paused]", goodSecret), true,
			[]string{f + `.secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" is not a secret reference: want env:NAME or ssm:/path (the secret is a reference, never the secret itself)`}},
		{"a missing secret", entry("https://h.example.com", "[request.paused]", "env:HITCH_TEST_NOT_SET"), true,
			[]string{f + `.secret: env:HITCH_TEST_NOT_SET: environment variable HITCH_TEST_NOT_SET is not set`}},
		{"not whsec_", entry("https://h.example.com", "[request.paused]", "env:HITCH_TEST_PLAIN"), true,
			[]string{f + `.secret: env:HITCH_TEST_PLAIN: a webhook secret starts with "whsec_"`}},
		{"missing fields", withNotifications("    - url: https://h.example.com\n"), true,
			[]string{f + ".events: required", f + ".secret: required"}},
		{"unknown field", withNotifications("    - url: https://h.example.com\n      events: [request.paused]\n      secret: " + ok + "\n      method: PUT\n"), true,
			[]string{f + `.method: unknown field (known: url, events, secret)`}},
		{"not a list", withNotifications("    url: https://h.example.com\n"), true,
			[]string{"agents/a.yaml: spec.notifications: must be a list, got a mapping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadOne(t, tt.def, catalog.Env{LoopbackWebhooks: tt.loopback})
			if err == nil {
				t.Fatalf("Load() succeeded, want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}
