package httpapi

import "net/http"

// CORS lets a browser page on origin call the API (the console pointed at
// another server, docs/api.md). An empty origin turns CORS off: next is
// returned as it is. A preflight (OPTIONS with Access-Control-Request-Method)
// from that origin is answered 204 here; every other answer to that origin
// carries Access-Control-Allow-Origin. On AWS, API Gateway answers the
// preflight (template.yaml's Cors) and the functions add the header to
// their own answers, through this same wrapper.
func CORS(origin string, next http.Handler) http.Handler {
	if origin == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		o := r.Header.Get("Origin")
		if o == "" || (origin != "*" && o != origin) {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", CORSMethods)
			h.Set("Access-Control-Allow-Headers", CORSHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "Retry-After, Content-Disposition")
		next.ServeHTTP(w, r)
	})
}

// The methods and request headers a cross-origin page may use; template.yaml's
// Cors lists the same.
const (
	CORSMethods = "GET,POST,DELETE,OPTIONS"
	CORSHeaders = "Authorization,Content-Type,Accept,Idempotency-Key,Last-Event-ID"
)
