package bedrockwire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// MaxCachePoints is how many cache points a request may hold.
const MaxCachePoints = 4

// CacheFields tells where Bedrock accepts cache points for a model: in the
// system prompt and the messages for Anthropic Claude and Amazon Nova (and
// the local model), in the tools too for Claude and the local model; for
// other models nowhere.
func CacheFields(modelID string) (systemAndMessages, tools bool) {
	id := strings.ToLower(modelID)
	switch {
	case id == "local", strings.Contains(id, "anthropic.claude"):
		return true, true
	case strings.Contains(id, "amazon.nova"):
		return true, false
	}
	return false, false
}

// CachePointAt is a cache point of a request and where it is, in the order
// Bedrock reads them: tools, system, messages.
type CachePointAt struct {
	// Field is "toolConfig.tools", "system" or "messages".
	Field string
	// Index is the tool's or system block's index, or the message's.
	Index int
	// Block is the content block's index within the message.
	Block int
	Point *CachePoint
}

func (p CachePointAt) String() string {
	if p.Field == "messages" {
		return fmt.Sprintf("messages.%d.content.%d", p.Index, p.Block)
	}
	return fmt.Sprintf("%s.%d", p.Field, p.Index)
}

// jsonPath is where the point is in Bedrock's JSON-pointer wording.
func (p CachePointAt) jsonPath() string {
	if p.Field == "messages" {
		return fmt.Sprintf("#/messages/%d/content/%d", p.Index, p.Block)
	}
	return "#/" + strings.ReplaceAll(p.Field, ".", "/") + fmt.Sprintf("/%d", p.Index)
}

// CachePoints lists the request's cache points, tools first, then system,
// then messages.
func CachePoints(r *Request) []CachePointAt {
	var out []CachePointAt
	if r.ToolConfig != nil {
		for i, t := range r.ToolConfig.Tools {
			if t.CachePoint != nil {
				out = append(out, CachePointAt{Field: "toolConfig.tools", Index: i, Point: t.CachePoint})
			}
		}
	}
	for i, b := range r.System {
		if b.CachePoint != nil {
			out = append(out, CachePointAt{Field: "system", Index: i, Point: b.CachePoint})
		}
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if b.CachePoint != nil {
				out = append(out, CachePointAt{Field: "messages", Index: i, Block: j, Point: b.CachePoint})
			}
		}
	}
	return out
}

// validateCache applies Bedrock's rules for cache points: only where the
// model accepts them, each after content of its own list (never first, never
// right after another), of type default with a TTL of 5m or 1h, at most
// MaxCachePoints, and TTLs that never grow from tools to system to messages.
func validateCache(r *Request) error {
	points := CachePoints(r)
	if len(points) == 0 {
		return nil
	}
	cached, tools := CacheFields(r.ModelID)
	for _, p := range points {
		if !cached || (p.Field == "toolConfig.tools" && !tools) {
			return invalid("Malformed input request: %s: extraneous key [cachePoint] is not permitted, please reformat your input and try again.", p.jsonPath())
		}
		if !follows(r, p) {
			return invalid("The cachePoint at %s must follow a content block of its own list, not start the list or follow another cachePoint.", p)
		}
		if p.Point.Type != types.CachePointTypeDefault {
			return invalid("1 validation error detected: Value '%s' at '%s.member.cachePoint.type' failed to satisfy constraint: Member must satisfy enum value set: [default]", p.Point.Type, p)
		}
		if p.Point.TTL != "" && !slices.Contains(types.CacheTTL("").Values(), p.Point.TTL) {
			return invalid("1 validation error detected: Value '%s' at '%s.member.cachePoint.ttl' failed to satisfy constraint: Member must satisfy enum value set: [5m, 1h]", p.Point.TTL, p)
		}
	}
	if len(points) > MaxCachePoints {
		return invalid("The model returned the following errors: A maximum of %d blocks with cache_control may be provided. Found %d.", MaxCachePoints, len(points))
	}
	for i := 1; i < len(points); i++ {
		prev, cur := points[i-1].Point.Duration(), points[i].Point.Duration()
		if ttlRank(cur) > ttlRank(prev) {
			return invalid("The model returned the following errors: a ttl='%s' cache_control block must not come after a ttl='%s' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.", cur, prev)
		}
	}
	return nil
}

// follows tells whether the point comes right after content of its list.
func follows(r *Request, p CachePointAt) bool {
	switch p.Field {
	case "toolConfig.tools":
		return p.Index > 0 && r.ToolConfig.Tools[p.Index-1].ToolSpec != nil
	case "system":
		return p.Index > 0 && r.System[p.Index-1].CachePoint == nil
	}
	content := r.Messages[p.Index].Content
	return p.Block > 0 && content[p.Block-1].CachePoint == nil
}

func ttlRank(t types.CacheTTL) int {
	if t == types.CacheTTLOneHour {
		return 1
	}
	return 0
}
