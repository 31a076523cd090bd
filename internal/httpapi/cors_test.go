package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/httpapi"
)

func TestCORS(t *testing.T) {
	const origin = "https://console.example.com"
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	cors := []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age", "Access-Control-Expose-Headers"}
	tests := []struct {
		name, allowed, method, origin, preflight string
		status                                   int
		want                                     map[string]string
	}{
		{"off: no headers", "", "GET", origin, "", http.StatusTeapot, map[string]string{}},
		{"off: a preflight goes to the API", "", "OPTIONS", origin, "POST", http.StatusTeapot, map[string]string{}},
		{"the origin's request", origin, "GET", origin, "", http.StatusTeapot, map[string]string{
			"Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": "Retry-After, Content-Disposition", "Vary": "Origin"}},
		{"the origin's preflight", origin, "OPTIONS", origin, "POST", http.StatusNoContent, map[string]string{
			"Access-Control-Allow-Origin":  origin,
			"Access-Control-Allow-Methods": "GET,POST,DELETE,OPTIONS",
			"Access-Control-Allow-Headers": "Authorization,Content-Type,Accept,Idempotency-Key,Last-Event-ID",
			"Access-Control-Max-Age":       "600", "Vary": "Origin"}},
		{"another origin", origin, "GET", "https://evil.example.com", "", http.StatusTeapot, map[string]string{"Vary": "Origin"}},
		{"another origin's preflight", origin, "OPTIONS", "https://evil.example.com", "POST", http.StatusTeapot, map[string]string{"Vary": "Origin"}},
		{"no Origin: not a browser", origin, "GET", "", "", http.StatusTeapot, map[string]string{"Vary": "Origin"}},
		{"any origin", "*", "GET", origin, "", http.StatusTeapot, map[string]string{
			"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "Retry-After, Content-Disposition", "Vary": "Origin"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/agents", nil)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.preflight != "" {
				r.Header.Set("Access-Control-Request-Method", tc.preflight)
			}
			w := httptest.NewRecorder()
			httpapi.CORS(tc.allowed, next).ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Errorf("status %d, want %d", w.Code, tc.status)
			}
			got := map[string]string{}
			for _, h := range append(cors, "Vary") {
				if v := w.Header().Get(h); v != "" {
					got[h] = v
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}
