// Package redact takes credentials out of URLs before they are shown to a
// person or written to a log: what Hitch shows of a URL it was configured
// with (an MCP server's endpoint) is its scheme, host and path — never its
// user info, query or fragment, where deployments put passwords and API
// keys (docs/api.md, "An MCP server that asks").
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// URL is raw's scheme, host and path. A raw that does not parse as a URL
// loses everything from '?' or '#' on, and anything before an '@' in its
// authority.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
	}
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	return scheme + "://" + authority + path
}

// urls finds URLs in text: a scheme, "://" and what follows up to a space,
// a quote or a bracket.
var urls = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>()\[\]{}]+`)

// Text is s with every URL in it as URL shows it: for messages that may
// quote a URL (an error of the HTTP client or of an SDK).
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urls.ReplaceAllStringFunc(s, func(m string) string {
		// Punctuation that ends a sentence or a clause is not the URL's.
		u := strings.TrimRight(m, ".,;:!")
		return URL(u) + m[len(u):]
	})
}
