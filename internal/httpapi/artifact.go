package httpapi

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/agent"
)

// PresignTTL is how long a presigned download URL is valid.
const PresignTTL = 5 * time.Minute

// artifact is GET /agents/{agent}/tasks/{task_id}/artifacts/{artifact_id}:
// the bytes, never rendered by a browser (an attachment, nosniff, a
// sandboxing CSP, not cached) — or, where artifacts are in S3, a 303 to a
// presigned URL (?redirect=false: {url, expires_at}).
func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	tid, err := agent.ParseID("task_id", r.PathValue("task_id"))
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	aid, err := agent.ParseID("artifact_id", r.PathValue("artifact_id"))
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	redirect := true
	if v := r.URL.Query().Get("redirect"); v != "" {
		if redirect, err = strconv.ParseBool(v); err != nil {
			writeError(w, r, s.log(), agent.Errorf(agent.CodeInvalidQuery, "redirect must be true or false"))
			return
		}
	}
	if s.Presigner != nil {
		a, err := s.Engine.Artifact(r.Context(), r.PathValue("agent"), userOf(r), tid, aid)
		if err != nil {
			writeError(w, r, s.log(), err)
			return
		}
		expires := time.Now().Add(PresignTTL).UTC()
		u, err := s.Presigner.Presign(r.Context(), a, ContentDisposition(a.Name), PresignTTL)
		if err != nil {
			writeError(w, r, s.log(), err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if !redirect {
			writeJSON(w, http.StatusOK, map[string]string{"url": u, "expires_at": expires.Format(time.RFC3339)})
			return
		}
		http.Redirect(w, r, u, http.StatusSeeOther)
		return
	}
	a, rc, err := s.Engine.OpenArtifact(r.Context(), r.PathValue("agent"), userOf(r), tid, aid)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", a.MediaType)
	h.Set("Content-Length", strconv.FormatInt(a.Size, 10))
	h.Set("Content-Disposition", ContentDisposition(a.Name))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, rc); err != nil {
		s.log().WarnContext(r.Context(), "an artifact's download was cut", "task_id", tid, "artifact_id", aid, "err", err)
	}
}

// ContentDisposition is an artifact's download disposition (RFC 6266): an
// attachment named filename="<ASCII fallback>" for the clients that read
// only that (curl -OJ), then filename*=UTF-8”<name> (the name
// percent-encoded but for RFC 8187's attr-chars), which the others prefer.
// The fallback is the name with each character that is not printable
// ASCII, and each " \ % / (quoting, escapes, percent-decoding, paths),
// replaced by _.
func ContentDisposition(name string) string {
	const attrChars = "!#$&+-.^_`|~"
	var b strings.Builder
	b.WriteString(`attachment; filename="`)
	for _, r := range name {
		if r < 0x20 || r > 0x7e || strings.ContainsRune(`"\%/`, r) {
			r = '_'
		}
		b.WriteRune(r)
	}
	b.WriteString(`"; filename*=UTF-8''`)
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte(attrChars, c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)>>4, 16)) + strings.ToUpper(strconv.FormatUint(uint64(c)&15, 16)))
		}
	}
	return b.String()
}
