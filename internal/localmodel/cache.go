package localmodel

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/hitch-agents/hitch/internal/bedrock/bedrockwire"
)

// Prompt caching as Bedrock accounts for it (Anthropic's rules, which Nova
// shares).
const (
	// minCachedTokens: a prefix shorter than this is not cached; its cache
	// point is accepted and does nothing.
	minCachedTokens = 1024
	// lookback: a cache point finds an earlier request's cached prefix only
	// if it ends at most this many blocks before the point.
	lookback = 20
	// sweepAt: past this many entries, expired ones are dropped.
	sweepAt = 4096
)

// promptCache holds the prefixes cached by earlier requests, by the hash of
// their content, each until its TTL runs out.
//
// A request's prompt is read the way Bedrock reads it: the tools, then the
// system blocks, then the messages' blocks, each block a unit whose tokens
// are its words (JSON punctuation splitting words). A prefix is cached when
// it ends at a cache point and holds at least minCachedTokens; it stays for
// the point's TTL (5 minutes unless 1h), and every request that reads it
// starts its TTL again. A request reads the longest cached prefix that ends
// within lookback blocks before one of its cache points, writes what lies
// between that and its last cache point long enough to be cached, and pays
// the full price for the rest.
type promptCache struct {
	now     func() time.Time
	mu      sync.Mutex
	entries map[[sha256.Size]byte]cacheEntry
}

type cacheEntry struct {
	expires time.Time
	ttl     time.Duration
}

func newPromptCache(now func() time.Time) *promptCache {
	return &promptCache{now: now, entries: map[[sha256.Size]byte]cacheEntry{}}
}

// boundary is the end of the prompt's first n units.
type boundary struct {
	tokens int // of the prefix
	hash   [sha256.Size]byte
}

// point is a cache point after the prompt's first n units.
type point struct {
	n   int
	ttl time.Duration
}

// prompt reads the request into its boundaries (boundaries[n] ends the first
// n units) and cache points. Without cache points, nothing is hashed.
func prompt(req *bedrockwire.Request) ([]boundary, []point) {
	hashing := len(bedrockwire.CachePoints(req)) > 0
	h := sha256.Sum256([]byte(req.ModelID)) // caches are per model
	bs := []boundary{{hash: h}}
	var ps []point
	add := func(kind string, v any, tokens int) {
		if !hashing {
			bs = append(bs, boundary{tokens: bs[len(bs)-1].tokens + tokens})
			return
		}
		raw, _ := json.Marshal(v)
		sum := sha256.New()
		sum.Write(bs[len(bs)-1].hash[:])
		sum.Write([]byte(kind))
		sum.Write(raw)
		var b boundary
		copy(b.hash[:], sum.Sum(nil))
		b.tokens = bs[len(bs)-1].tokens + tokens
		bs = append(bs, b)
	}
	mark := func(cp *bedrockwire.CachePoint) {
		ttl := 5 * time.Minute
		if cp.Duration() == types.CacheTTLOneHour {
			ttl = time.Hour
		}
		ps = append(ps, point{n: len(bs) - 1, ttl: ttl})
	}
	if req.ToolConfig != nil {
		for _, t := range req.ToolConfig.Tools {
			if t.CachePoint != nil {
				mark(t.CachePoint)
				continue
			}
			add("tool", t.ToolSpec, toolTokens(t.ToolSpec))
		}
	}
	for _, s := range req.System {
		if s.CachePoint != nil {
			mark(s.CachePoint)
			continue
		}
		add("system", s.Text, countWords(s.Text))
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.CachePoint != nil {
				mark(b.CachePoint)
				continue
			}
			add(m.Role, b, blockWords(b))
		}
	}
	return bs, ps
}

// account returns the request's input tokens billed at the full price, read
// from the cache and written to it, and caches what the request writes.
func (c *promptCache) account(req *bedrockwire.Request) (input, read, write int) {
	bs, ps := prompt(req)
	total := bs[len(bs)-1].tokens
	if len(ps) == 0 {
		return total, 0, 0
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	readAt := -1
	for _, p := range ps {
		for n := p.n; n > 0 && n >= p.n-lookback; n-- {
			if e, ok := c.entries[bs[n].hash]; ok && now.Before(e.expires) {
				if n > readAt {
					readAt = n
				}
				break
			}
		}
	}
	if readAt > 0 {
		read = bs[readAt].tokens
		c.touch(bs[readAt].hash, now)
	}
	for _, p := range ps {
		b := bs[p.n]
		switch {
		case p.n <= readAt:
			c.touch(b.hash, now) // a hit at the point itself starts its TTL again
		case b.tokens >= minCachedTokens:
			c.entries[b.hash] = cacheEntry{expires: now.Add(p.ttl), ttl: p.ttl}
			write = max(write, b.tokens-read)
		}
	}
	if len(c.entries) > sweepAt {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
	}
	return total - read - write, read, write
}

// touch starts a live entry's TTL again.
func (c *promptCache) touch(h [sha256.Size]byte, now time.Time) {
	if e, ok := c.entries[h]; ok && now.Before(e.expires) {
		e.expires = now.Add(e.ttl)
		c.entries[h] = e
	}
}

// toolTokens counts a tool's name, description and schema.
func toolTokens(t *bedrockwire.ToolSpec) int {
	if t == nil {
		return 0
	}
	return countWords(t.Name) + countWords(t.Description) + jsonWords(t.InputSchema.JSON)
}

// jsonWords counts the words of JSON, its punctuation splitting them.
func jsonWords(raw json.RawMessage) int {
	return len(strings.FieldsFunc(string(raw), func(r rune) bool {
		return strings.ContainsRune(" \t\r\n{}[]\":,", r)
	}))
}
