package catalog_test

import (
	"testing"
	"time"

	"github.com/hitch-agents/hitch/internal/catalog"
)

// spec.agent.cache: auto (or nothing) caches on Claude, Nova and the local
// model only; 5m, 1h and off say so for any model.
func TestCacheTTL(t *testing.T) {
	for _, tc := range []struct {
		model, cache string
		want         time.Duration
	}{
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", "", 5 * time.Minute},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", "    cache: {ttl: auto}\n", 5 * time.Minute},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-5-20251101-v1:0", "", 5 * time.Minute},
		{"amazon.nova-pro-v1:0", "", 5 * time.Minute},
		{"local", "", 5 * time.Minute},
		{"meta.llama3-70b-instruct-v1:0", "", 0},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123", "", 0},
		{"meta.llama3-70b-instruct-v1:0", "    cache: {ttl: 5m}\n", 5 * time.Minute},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "    cache: {ttl: 1h}\n", time.Hour},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", "    cache: {ttl: off}\n", 0},
	} {
		t.Run(tc.model+tc.cache, func(t *testing.T) {
			def := "apiVersion: tealagents/v1alpha1\nkind: Agent\nname: a\nversion: 0.1\nspec:\n  agent:\n    model: " + tc.model + "\n" + tc.cache
			a, err := loadOne(t, def, catalog.Env{})
			if err != nil {
				t.Fatal(err)
			}
			if a.CacheTTL != tc.want {
				t.Errorf("CacheTTL = %v, want %v", a.CacheTTL, tc.want)
			}
		})
	}
}
