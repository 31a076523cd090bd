package bedrock

import (
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
)

// cachePoint is the CachePointBlock of a request's TTL, or nil for none.
//
// Converse takes cache points in the tools, the system prompt and the
// messages, and caches everything before each one. The model puts two: one
// after the system prompt, which covers the tools before it and is the same
// on every call of the agent, and one after the last block of the newest
// message, so that the next call — the tool loop's next turn, or the leg
// after an approval within the TTL — reads the whole conversation so far
// from the cache and pays full price only for what is new. None goes in the
// tools, where Amazon Nova refuses them. A 5-minute TTL is Bedrock's
// default and is not sent, so a model that predates the field accepts it.
func cachePoint(ttl time.Duration) *types.CachePointBlock {
	if ttl <= 0 {
		return nil
	}
	cp := &types.CachePointBlock{Type: types.CachePointTypeDefault}
	if ttl > 5*time.Minute {
		cp.Ttl = types.CacheTTLOneHour
	}
	return cp
}

// cacheRefused tells an error by which Bedrock refused a request's cache
// points: a ValidationException (or an AccessDeniedException, which a model
// without prompt caching answers in some accounts) whose message names them
// ("extraneous key [cachePoint] is not permitted", "A maximum of 4 blocks
// with cache_control", "did not allow prompt caching", a TTL the model does
// not offer).
func cacheRefused(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch strings.ToLower(api.ErrorCode()) {
	case "validationexception", "accessdeniedexception":
	default:
		return false
	}
	msg := strings.ToLower(api.ErrorMessage())
	for _, s := range []string{"cachepoint", "cache point", "cache_control", "prompt caching", "cache checkpoint", "ttl"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
