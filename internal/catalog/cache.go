package catalog

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The values of spec.agent.cache.ttl.
const (
	CacheAuto = "auto"
	CacheOff  = "off"
	Cache5m   = "5m"
	Cache1h   = "1h"
)

// cache reads spec.agent.cache: {ttl: 5m | 1h | off | auto}, absent being
// auto. auto caches for 5 minutes when the model is one Bedrock caches
// prompts for (CachesByDefault), and not at all otherwise.
func (d *decoder) cache(n *yaml.Node, at, modelID string) time.Duration {
	ttl := CacheAuto
	if n != nil {
		f := d.fields(n, at, "ttl")
		if f == nil {
			return 0
		}
		if f["ttl"] == nil {
			d.fail(join(at, "ttl"), "required: 5m, 1h, off or auto")
			return 0
		}
		s, ok := d.str(f["ttl"], join(at, "ttl"))
		if !ok {
			return 0
		}
		ttl = s
	}
	switch ttl {
	case Cache5m:
		return 5 * time.Minute
	case Cache1h:
		return time.Hour
	case CacheOff:
		return 0
	case CacheAuto:
		if CachesByDefault(modelID) {
			return 5 * time.Minute
		}
		return 0
	}
	d.fail(join(at, "ttl"), "must be 5m, 1h, off or auto, got %q", ttl)
	return 0
}

// CachesByDefault tells the models whose prompts are cached when an agent
// says nothing (cache auto): Anthropic Claude and Amazon Nova on Bedrock,
// named by a model id, a cross-region inference profile (us.anthropic.…)
// or an ARN holding one, and the local model ("local"). Others, such as an
// application inference profile's ARN, which does not name its model, need
// cache.ttl set.
func CachesByDefault(modelID string) bool {
	id := strings.ToLower(modelID)
	return id == "local" || strings.Contains(id, "anthropic.claude") || strings.Contains(id, "amazon.nova")
}
