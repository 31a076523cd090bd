package auth

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

const (
	// RefreshInterval is the least time between two fetches of an issuer's
	// keys, whatever the tokens ask for.
	RefreshInterval = time.Minute
	// KeysMaxAge is how long fetched keys are used before the next token
	// triggers a refresh (so a key the issuer withdrew stops working).
	KeysMaxAge = time.Hour

	fetchTimeout    = 10 * time.Second
	maxDocumentSize = 1 << 20
	minRSABits      = 2048
)

// errUnknownKID: the kid is not in the keys, and they may not be fetched
// again yet.
var errUnknownKID = errors.New("unknown kid")

// keySet is one issuer's JWKS cache. At most one fetch runs at a time and
// fetches start at least RefreshInterval apart; callers that need keys while
// a fetch runs wait for it.
type keySet struct {
	issuer    string // the discovery document's expected "issuer"
	discovery string // the discovery document's URL
	client    *http.Client
	now       func() time.Time
	log       *slog.Logger

	mu        sync.Mutex
	keys      map[string]*rsa.PublicKey // by kid; nil before the first fetch
	fetchedAt time.Time                 // of the keys
	triedAt   time.Time                 // of the last fetch, failed or not
	inflight  chan struct{}             // closed when the running fetch ends
	jwksURI   string                    // from discovery; only the fetch holder touches it
}

func newKeySet(issuer, discovery string, client *http.Client, now func() time.Time, log *slog.Logger) *keySet {
	return &keySet{issuer: issuer, discovery: discovery, client: client, now: now, log: log}
}

// key returns the public key named kid, fetching the keys when kid is
// unknown or they are older than KeysMaxAge and RefreshInterval has passed
// since the last fetch.
func (s *keySet) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	for {
		s.mu.Lock()
		now := s.now()
		k, ok := s.keys[kid]
		fresh := s.keys != nil && now.Sub(s.fetchedAt) < KeysMaxAge
		if ok && fresh {
			s.mu.Unlock()
			return k, nil
		}
		if ch := s.inflight; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if !s.triedAt.IsZero() && now.Sub(s.triedAt) < RefreshInterval {
			s.mu.Unlock()
			if ok {
				return k, nil // stale, but not refreshable yet
			}
			return nil, fmt.Errorf("%w %q (keys fetched %s ago)", errUnknownKID, kid, now.Sub(s.triedAt).Round(time.Second))
		}
		ch := make(chan struct{})
		s.inflight, s.triedAt = ch, now
		s.mu.Unlock()

		keys, err := s.fetch(ctx)

		s.mu.Lock()
		if err == nil {
			s.keys, s.fetchedAt = keys, s.now()
		}
		s.inflight = nil
		close(ch)
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("auth: fetching keys failed", "issuer", s.issuer, "err", err)
			if ok {
				return k, nil // keep using a stale key while the issuer is unreachable
			}
			return nil, fmt.Errorf("fetching keys of %q: %w", s.issuer, err)
		}
		s.log.Info("auth: keys fetched", "issuer", s.issuer, "keys", len(keys), "wanted_kid", kid)
	}
}

// fetch reads the discovery document (once) and the JWKS. It does not stop
// when the token's caller gives up: the fetch serves every waiter, and a
// canceled fetch would still count against RefreshInterval.
func (s *keySet) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	if s.jwksURI == "" {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := s.get(ctx, s.discovery, &doc); err != nil {
			return nil, err
		}
		if doc.Issuer != s.issuer {
			return nil, fmt.Errorf("discovery document names issuer %q", doc.Issuer)
		}
		if doc.JWKSURI == "" {
			return nil, errors.New("discovery document has no jwks_uri")
		}
		s.jwksURI = doc.JWKSURI
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := s.get(ctx, s.jwksURI, &set); err != nil {
		s.jwksURI = "" // discover again next time: the document may have moved
		return nil, err
	}
	keys := make(map[string]*rsa.PublicKey)
	for _, raw := range set.Keys {
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(raw); err != nil {
			continue // a key type go-jose does not know; not one of ours
		}
		if k, ok := signingKey(jwk); ok {
			if _, dup := keys[jwk.KeyID]; !dup {
				keys[jwk.KeyID] = k
			}
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS holds no RS256 signing key")
	}
	return keys, nil
}

// signingKey returns jwk's key if it may verify RS256 signatures.
func signingKey(jwk jose.JSONWebKey) (*rsa.PublicKey, bool) {
	k, ok := jwk.Key.(*rsa.PublicKey)
	if !ok || jwk.KeyID == "" || k.N.BitLen() < minRSABits {
		return nil, false
	}
	if jwk.Use != "" && jwk.Use != "sig" {
		return nil, false
	}
	if jwk.Algorithm != "" && jwk.Algorithm != "RS256" {
		return nil, false
	}
	return k, true
}

func (s *keySet) get(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentSize+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxDocumentSize {
		return fmt.Errorf("GET %s: document over %d bytes", url, maxDocumentSize)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
