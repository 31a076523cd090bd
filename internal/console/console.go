// Package console serves Hitch's web console: a small single-page client of
// the HTTP API (docs/api.md) for people who approve tool calls and answer
// what agents ask. Its assets are plain HTML, CSS and JavaScript modules
// embedded in the binary — no CDN, no build step — so `hitch serve` serves
// it with nothing else installed.
//
// The console is a pure API client: everything it shows comes from the
// routes of docs/api.md (GET /agents, the task lists, GET task, invoke, resume,
// GET events), called with fetch. It can point at the local server (dev auth:
// a user name becomes "Bearer <user>") or at a deployed API with a bearer
// token, which needs that API to allow the console's origin (CORS).
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console/"

// csp keeps the page to its own assets; connect-src stays open so that the
// console can call a deployed API on another origin; img-src allows blob:,
// the image artifacts the console shows from their bytes (an image runs
// nothing; other artifacts are only downloaded).
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self' http: https:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the console's assets under Prefix, and redirects the bare
// "/console" to it.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// Mount serves the console under Prefix (and "/console") and everything else
// with api.
func Mount(api http.Handler) http.Handler {
	console := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") || strings.HasPrefix(r.URL.Path, Prefix) {
			console.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
