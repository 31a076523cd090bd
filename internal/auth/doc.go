// Package auth verifies the bearer tokens of Hitch's API (docs/api.md).
//
// A Verifier accepts a JWT only when all of these hold, in this order:
//
//   - the token is at most MaxTokenBytes long (checked before any parsing);
//   - its header names RS256 (the only algorithm allowed: "none", HS256 and
//     every other algorithm are refused before a key is looked up, so an RSA
//     public key can never be used as an HMAC secret);
//   - its header has no "crit" (RFC 7515 §4.1.11: critical extensions a
//     recipient does not understand must be refused, and Verify understands
//     none);
//   - its claims are a JSON object whose registered claims have their types:
//     "exp", "nbf" and "iat" JSON numbers (RFC 7519 §2 NumericDate; a numeric
//     string such as "9999999999", or null, is refused), "iss", "sub", "oid",
//     "tid" strings, "aud" a string or a list of strings; names match exactly
//     ("EXP" is not "exp");
//   - its unverified "iss" is exactly one of the configured issuers, and its
//     "kid" names a key of that issuer's JWKS;
//   - the signature verifies with that key;
//   - "exp" is present and not passed, "nbf" (if present) is reached, both
//     with a 60 s leeway;
//   - "aud" (a string or a list) contains the configured audience;
//   - it names a user ("oid" for Entra ID, else "sub").
//
// Any failure above is ErrUnauthorized (401). A token that passes them but
// whose tenant ("tid") is not in the tenant allow-list, or which lacks the
// required scope ("scp", space-separated, or "roles"), is ErrForbidden (403).
//
// # Issuers
//
// Issuers are compared exactly. For Entra ID v2 they are per tenant:
// https://login.microsoftonline.com/<tenant>/v2.0. An issuer may also be the
// multi-tenant template https://login.microsoftonline.com/{tenantid}/v2.0 (as
// Entra's "common" discovery document spells it): a token matches it when its
// "iss" is the template with "{tenantid}" replaced by its own "tid". Such an
// issuer requires a tenant allow-list, or any tenant in the world would be let
// in; its keys come from the discovery document of the template with
// "{tenantid}" replaced by "common".
//
// # Keys
//
// Each issuer's JWKS is found through its discovery document
// (<issuer>/.well-known/openid-configuration, field jwks_uri), fetched on the
// first token, cached, and fetched again when a token names an unknown "kid"
// or the cache is older than an hour — but never more than once a minute per
// issuer, however many tokens arrive with unknown kids. Only RSA signing keys
// of at least 2048 bits are kept; JWKs are parsed by go-jose, and signatures
// are verified by golang-jwt.
//
// # Secrets
//
// A Token never prints itself: it implements slog.LogValuer, fmt.Stringer
// and fmt.GoStringer with a redacted value. Errors never carry a token.
package auth
