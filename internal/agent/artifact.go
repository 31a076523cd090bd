// Artifacts: what an agent produces — a report, an image, a CSV — kept with
// its task apart from the conversation (docs/architecture.md, "Artifacts").
//
// A tool call makes one through SaveArtifact, with the context its Run was
// given: the bytes go to the engine's ArtifactBytes first, under the
// artifact's id (never its name), then the metadata (an ART# item) is
// written by the iteration write that records the call's result, so a
// listed artifact always has its bytes. The result the model sees names
// each artifact the call made; a turn never reads ART# items.

package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"mime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Artifact limits (docs/api.md, "Artifacts"); variables so that tests can
// reach them cheaply.
var (
	// MaxArtifactBytes bounds one artifact.
	MaxArtifactBytes int64 = 100 << 20
	// MaxArtifacts bounds the artifacts of a task.
	MaxArtifacts = 1000
)

// DefaultArtifactQuota bounds the bytes of a user's artifacts, over all
// their tasks, when the engine names no ArtifactQuota: 10 GiB.
const DefaultArtifactQuota int64 = 10 << 30

// ParseArtifactQuota reads --artifact-quota / HITCH_ARTIFACT_QUOTA: a
// number of bytes with an optional unit (KiB, MiB, GiB, TiB, or KB, MB, GB,
// TB in powers of ten), "" for DefaultArtifactQuota, 0 for no quota. It
// returns the value of Engine.ArtifactQuota.
func ParseArtifactQuota(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a number of bytes like 10GiB, 500MiB or 0 (no quota)", s)
	}
	if n == 0 {
		return -1, nil
	}
	return n * mult, nil
}

// artifactQuota is the per-user limit AddArtifactBytes is given (0: none).
func (e *Engine) artifactQuota() int64 {
	switch q := e.ArtifactQuota; {
	case q == 0:
		return DefaultArtifactQuota
	case q < 0:
		return 0
	default:
		return q
	}
}

const (
	// MaxArtifactName bounds a name, in characters.
	MaxArtifactName = 255
	// DefaultArtifactType is the media type of an artifact that names none.
	DefaultArtifactType = "application/octet-stream"
)

// EventArtifact is the event of an artifact saved by a tool call.
const EventArtifact = "artifact"

// Artifact is an artifact's metadata (an ART#<id> item of its task).
type Artifact struct {
	ID         string    `json:"artifact_id"`
	TaskID     string    `json:"-"`
	Name       string    `json:"name"`
	MediaType  string    `json:"media_type"`
	Size       int64     `json:"size"`
	SHA256     string    `json:"sha256"`
	RequestID  string    `json:"request_id"`
	ToolCallID string    `json:"tool_call_id"`
	CreatedAt  time.Time `json:"created_at"`
	// Seq is a history entry of the request that made it (the last when the
	// call ran): an edit that supersedes the entry hides the artifact.
	Seq int64 `json:"seq"`
}

// ArtifactSK is an artifact's sort key in its task's partition.
func ArtifactSK(id string) string { return "ART#" + id }

// ArtifactBytes keeps artifacts' bytes, under their task and id. A Put
// whose body fails leaves nothing behind.
type ArtifactBytes interface {
	// Put stores the body as the artifact's bytes.
	Put(ctx context.Context, taskID, artifactID string, body io.Reader) error
	// Open reads the artifact's bytes; ErrNotFound when there are none.
	Open(ctx context.Context, taskID, artifactID string) (io.ReadCloser, error)
	// Delete deletes one artifact's bytes (gone already is no error).
	Delete(ctx context.Context, taskID, artifactID string) error
	// DeleteTask deletes the bytes of every artifact of the task.
	DeleteTask(ctx context.Context, taskID string) error
}

// NewArtifact is what a tool saves: a name, a media type ("" for
// DefaultArtifactType) and the bytes.
type NewArtifact struct {
	Name      string
	MediaType string
	Body      io.Reader
}

// ValidateArtifactName checks a name: 1–255 characters, no "/", "\",
// control characters or Unicode format characters (category Cf: the
// bidirectional overrides that make "a\u202eexe.txt" read as a .txt, the
// zero-width ones; docs/api.md, "Artifacts"). The error says what is wrong,
// for the model.
func ValidateArtifactName(name string) error {
	switch n := utf8.RuneCountInString(name); {
	case !utf8.ValidString(name):
		return errors.New("the artifact name is not valid UTF-8")
	case n == 0:
		return errors.New("the artifact name is empty; give it 1 to 255 characters")
	case n > MaxArtifactName:
		return fmt.Errorf("the artifact name has %d characters; at most %d are allowed", n, MaxArtifactName)
	}
	for _, c := range name {
		switch {
		case c == '/' || c == '\\':
			return fmt.Errorf("the artifact name %q contains %q; names may not contain / or \\", name, c)
		case unicode.IsControl(c):
			return fmt.Errorf("the artifact name %q contains the control character %U", name, c)
		case unicode.Is(unicode.Cf, c):
			return fmt.Errorf("the artifact name %q contains the format character %U (bidirectional and invisible characters are not allowed)", name, c)
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("the artifact name %q is not a file name", name)
	}
	return nil
}

// normalizeMediaType checks a media type and returns it normalised ("" is
// DefaultArtifactType).
func normalizeMediaType(mt string) (string, error) {
	if mt == "" {
		return DefaultArtifactType, nil
	}
	t, params, err := mime.ParseMediaType(mt)
	if err != nil || !strings.Contains(t, "/") {
		return "", fmt.Errorf("the media type %q is not a media type like text/plain or image/png", mt)
	}
	return mime.FormatMediaType(t, params), nil
}

// ErrArtifactTooLarge is a body past MaxArtifactBytes.
var ErrArtifactTooLarge = errors.New("the artifact is too large")

func tooLarge() error {
	return fmt.Errorf("%w: an artifact may hold at most %d bytes (%d MB)", ErrArtifactTooLarge, MaxArtifactBytes, MaxArtifactBytes>>20)
}

// ErrNoArtifacts: the engine keeps no artifacts (none configured), or the
// call runs outside a request.
var ErrNoArtifacts = errors.New("artifacts are not available here")

// callArtifacts is a tool call's access to its task's artifacts, carried
// in the call's context.
type callArtifacts struct {
	r      *Run
	callID string
	seq    int64
	mu     sync.Mutex
	saved  []Artifact
}

type callArtifactsKey struct{}

func (r *Run) withArtifacts(ctx context.Context, callID string, seq int64) (context.Context, *callArtifacts) {
	ca := &callArtifacts{r: r, callID: callID, seq: seq}
	return context.WithValue(ctx, callArtifactsKey{}, ca), ca
}

// CanSaveArtifacts tells whether a tool call running in ctx can save
// artifacts (SaveArtifact would not answer ErrNoArtifacts).
func CanSaveArtifacts(ctx context.Context) bool {
	ca, _ := ctx.Value(callArtifactsKey{}).(*callArtifacts)
	return ca != nil && ca.r.e.Artifacts != nil
}

// SaveArtifact keeps an artifact made by the tool call running in ctx: the
// bytes now, the metadata with the call's result. It fails, keeping
// nothing, on a bad name or media type, past MaxArtifactBytes or past the
// task's MaxArtifacts; its errors are for the model to read.
func SaveArtifact(ctx context.Context, in NewArtifact) (Artifact, error) {
	ca, _ := ctx.Value(callArtifactsKey{}).(*callArtifacts)
	if ca == nil || ca.r.e.Artifacts == nil {
		return Artifact{}, ErrNoArtifacts
	}
	return ca.save(ctx, in)
}

func (ca *callArtifacts) save(ctx context.Context, in NewArtifact) (Artifact, error) {
	r := ca.r
	if err := ValidateArtifactName(in.Name); err != nil {
		return Artifact{}, err
	}
	mt, err := normalizeMediaType(in.MediaType)
	if err != nil {
		return Artifact{}, err
	}
	if !r.reserveArtifact() {
		return Artifact{}, fmt.Errorf("the task already holds %d artifacts, the most a task may hold", MaxArtifacts)
	}
	a := Artifact{ID: r.e.newID(), TaskID: r.taskID, Name: in.Name, MediaType: mt, RequestID: r.reqID,
		ToolCallID: ca.callID, CreatedAt: r.e.now(), Seq: ca.seq}
	body := &meteredReader{r: in.Body, limit: MaxArtifactBytes, h: sha256.New()}
	if err := r.e.Artifacts.Put(ctx, r.taskID, a.ID, body); err != nil {
		r.releaseArtifact()
		if body.over {
			return Artifact{}, tooLarge()
		}
		if body.err != nil {
			return Artifact{}, body.err // the tool's own reader failed
		}
		r.e.log().ErrorContext(ctx, "storing an artifact's bytes failed", "task_id", r.taskID, "request_id", r.reqID, "err", err)
		return Artifact{}, errors.New("the artifact could not be stored")
	}
	a.Size, a.SHA256 = body.n, hex.EncodeToString(body.h.Sum(nil))
	// The user's quota is counted once the size is known: one conditional
	// update of a counter per user, so concurrent saves never pass it
	// together (docs/api.md, "Artifacts"). A refused save keeps nothing.
	if held, err := r.e.Store.AddArtifactBytes(ctx, r.userID, a.Size, r.e.artifactQuota()); err != nil {
		r.releaseArtifact()
		if derr := r.e.Artifacts.Delete(context.WithoutCancel(ctx), r.taskID, a.ID); derr != nil {
			r.e.log().ErrorContext(ctx, "deleting a refused artifact's bytes failed", "task_id", r.taskID, "artifact_id", a.ID, "err", derr)
		}
		if errors.Is(err, ErrQuotaExceeded) {
			return Artifact{}, fmt.Errorf("%w: %s (413): the artifact has %d bytes and your artifacts already hold %d of your quota of %d bytes; delete tasks you no longer need",
				ErrQuotaExceeded, CodeQuotaExceeded, a.Size, held, r.e.artifactQuota())
		}
		r.e.log().ErrorContext(ctx, "counting an artifact against its user's quota failed", "task_id", r.taskID, "request_id", r.reqID, "err", err)
		return Artifact{}, errors.New("the artifact could not be stored")
	}
	ca.mu.Lock()
	ca.saved = append(ca.saved, a)
	ca.mu.Unlock()
	return a, nil
}

// took returns the artifacts the call saved.
func (ca *callArtifacts) took() []Artifact {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	return ca.saved
}

// meteredReader counts, hashes and bounds what a Put reads.
type meteredReader struct {
	r     io.Reader
	limit int64
	n     int64
	h     hash.Hash
	over  bool
	err   error
}

func (m *meteredReader) Read(p []byte) (int, error) {
	if m.r == nil {
		return 0, io.EOF
	}
	k, err := m.r.Read(p)
	m.n += int64(k)
	if m.n > m.limit {
		m.over = true
		return 0, tooLarge()
	}
	m.h.Write(p[:k])
	if err != nil && err != io.EOF {
		m.err = err
	}
	return k, err
}

// reserveArtifact takes one of the task's MaxArtifacts places for an
// artifact being saved; false when none is left.
func (r *Run) reserveArtifact() bool {
	r.artMu.Lock()
	defer r.artMu.Unlock()
	if r.artWritten+len(r.artifacts)+r.artReserved >= MaxArtifacts {
		return false
	}
	r.artReserved++
	return true
}

func (r *Run) releaseArtifact() {
	r.artMu.Lock()
	r.artReserved--
	r.artMu.Unlock()
}

// keepArtifacts moves a call's saved artifacts from reserved to what the
// next write puts.
func (r *Run) keepArtifacts(as []Artifact) {
	if len(as) == 0 {
		return
	}
	r.artMu.Lock()
	r.artReserved -= len(as)
	r.artifacts = append(r.artifacts, as...)
	r.artMu.Unlock()
}

// nameArtifacts adds to a call's result a note naming each artifact the
// call made (after truncation: the names always reach the model).
func nameArtifacts(b Block, as []Artifact) Block {
	content := slices.Clone(b.Content)
	if len(content) == 1 && content[0].Type == BlockText && content[0].Text == "" {
		content = nil // the empty text of a tool that said nothing
	}
	for _, a := range as {
		content = append(content, artifactNote(a))
	}
	b.Content = content
	return b
}

// artifactNote is the text the model sees for an artifact its call made.
func artifactNote(a Artifact) Block {
	return TextBlock(fmt.Sprintf("Saved artifact %q (id %s, %s, %d bytes).", a.Name, a.ID, a.MediaType, a.Size))
}

// artifactEvent is the artifact event's data.
func artifactEvent(a Artifact) map[string]any {
	return map[string]any{"artifact_id": a.ID, "name": a.Name, "media_type": a.MediaType, "size": a.Size, "tool_call_id": a.ToolCallID}
}

// ReadArtifact reads an artifact of the task whose tool call runs in ctx:
// its metadata and at most limit bytes (more is an error). Unknown ids wrap
// ErrNotFound.
func ReadArtifact(ctx context.Context, artifactID string, limit int64) (Artifact, []byte, error) {
	ca, _ := ctx.Value(callArtifactsKey{}).(*callArtifacts)
	if ca == nil || ca.r.e.Artifacts == nil {
		return Artifact{}, nil, ErrNoArtifacts
	}
	r := ca.r
	id, err := ParseID("artifact_id", artifactID)
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("%q is not an artifact id (a UUID)", artifactID)
	}
	a, err := r.e.Store.GetArtifact(ctx, r.taskID, id)
	if errors.Is(err, ErrNotFound) {
		// One saved earlier in this leg is not written yet.
		a, err = r.pendingArtifact(id)
	}
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Artifact{}, nil, fmt.Errorf("this task has no artifact %s: %w", id, ErrNotFound)
		}
		return Artifact{}, nil, err
	}
	if a.Size > limit {
		return *a, nil, fmt.Errorf("the artifact %q has %d bytes; read_artifact reads at most %d", a.Name, a.Size, limit)
	}
	rc, err := r.e.Artifacts.Open(ctx, r.taskID, id)
	if err != nil {
		return *a, nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return *a, nil, err
	}
	if int64(len(b)) > limit {
		return *a, nil, fmt.Errorf("the artifact %q has more than %d bytes", a.Name, limit)
	}
	return *a, b, nil
}

// pendingArtifact finds an artifact this leg saved and has not written yet.
func (r *Run) pendingArtifact(id string) (*Artifact, error) {
	r.artMu.Lock()
	defer r.artMu.Unlock()
	for _, a := range r.artifacts {
		if a.ID == id {
			return &a, nil
		}
	}
	return nil, ErrNotFound
}

// ArtifactVisible tells whether an artifact shows by default: not made by
// a request an edit superseded.
func (t *Task) ArtifactVisible(a Artifact) bool {
	_, sup := t.IsSuperseded(a.Seq)
	return !sup
}

// ListArtifacts reads the artifacts of a task the user owns, oldest first;
// those of superseded requests only when includeSuperseded.
func (e *Engine) ListArtifacts(ctx context.Context, agentName, userID, taskID string, includeSuperseded bool) (_ []Artifact, err error) {
	defer wrap(&err, "list the artifacts of task %s", taskID)
	t, err := e.ownedMeta(ctx, agentName, userID, taskID)
	if err != nil {
		return nil, err
	}
	return e.taskArtifacts(ctx, t, includeSuperseded)
}

func (e *Engine) taskArtifacts(ctx context.Context, t *Task, includeSuperseded bool) ([]Artifact, error) {
	all, err := e.Store.ListArtifacts(ctx, t.ID)
	if err != nil {
		return nil, fmt.Errorf("list artifacts of %s: %w", t.ID, err)
	}
	out := make([]Artifact, 0, len(all))
	for _, a := range all {
		if includeSuperseded || t.ArtifactVisible(a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Artifact reads an artifact's metadata, with the checks of every read:
// the agent, the task, the owner, then the artifact (artifact_not_found).
func (e *Engine) Artifact(ctx context.Context, agentName, userID, taskID, artifactID string) (_ *Artifact, err error) {
	defer wrap(&err, "read artifact %s of task %s", artifactID, taskID)
	t, err := e.ownedMeta(ctx, agentName, userID, taskID)
	if err != nil {
		return nil, err
	}
	a, err := e.Store.GetArtifact(ctx, t.ID, artifactID)
	if errors.Is(err, ErrNotFound) {
		return nil, Errorf(CodeArtifactNotFound, "task %s has no artifact %s", t.ID, artifactID)
	}
	if err != nil {
		return nil, fmt.Errorf("get artifact %s of %s: %w", artifactID, t.ID, err)
	}
	a.TaskID = t.ID
	return a, nil
}

// OpenArtifact reads an artifact's metadata (as Artifact) and opens its
// bytes.
func (e *Engine) OpenArtifact(ctx context.Context, agentName, userID, taskID, artifactID string) (_ *Artifact, _ io.ReadCloser, err error) {
	defer wrap(&err, "open artifact %s of task %s", artifactID, taskID)
	a, err := e.Artifact(ctx, agentName, userID, taskID, artifactID)
	if err != nil {
		return nil, nil, err
	}
	if e.Artifacts == nil {
		return nil, nil, fmt.Errorf("artifact %s of %s: no artifact bytes are configured", artifactID, taskID)
	}
	rc, err := e.Artifacts.Open(ctx, a.TaskID, a.ID)
	if err != nil {
		// Bytes are written before the metadata: a listed artifact
		// without bytes is an inconsistency, not a client's mistake.
		return nil, nil, fmt.Errorf("open artifact %s of %s: %w", a.ID, a.TaskID, err)
	}
	return a, rc, nil
}

// deleteArtifactBytes deletes a deleted task's artifact bytes and gives
// their count back to its owner's quota; a failure is logged (the bytes are
// unreachable without their metadata).
func (e *Engine) deleteArtifactBytes(ctx context.Context, t *Task) {
	if e.Artifacts == nil {
		return
	}
	if err := e.Artifacts.DeleteTask(ctx, t.ID); err != nil {
		e.log().ErrorContext(ctx, "deleting a deleted task's artifact bytes failed", "task_id", t.ID, "err", err)
	}
	if t.ArtifactBytes > 0 {
		if _, err := e.Store.AddArtifactBytes(ctx, t.UserID, -t.ArtifactBytes, 0); err != nil {
			e.log().ErrorContext(ctx, "giving a deleted task's artifact bytes back to the quota failed", "task_id", t.ID, "user_id", t.UserID, "err", err)
		}
	}
}

// ArtifactView is an artifact as GET task shows it.
type ArtifactView struct {
	ID         string    `json:"artifact_id"`
	Name       string    `json:"name"`
	MediaType  string    `json:"media_type"`
	Size       int64     `json:"size"`
	SHA256     string    `json:"sha256"`
	RequestID  string    `json:"request_id"`
	ToolCallID string    `json:"tool_call_id"`
	CreatedAt  time.Time `json:"created_at"`
	// URL is the download route, relative to the API's base URL.
	URL string `json:"url"`
	// SupersededBy, with include_superseded, is the edit that hid it.
	SupersededBy string `json:"superseded_by,omitempty"`
}

// ArtifactView shows an artifact of the task.
func (t *Task) ArtifactView(a Artifact) ArtifactView {
	by, _ := t.IsSuperseded(a.Seq)
	return ArtifactView{ID: a.ID, Name: a.Name, MediaType: a.MediaType, Size: a.Size, SHA256: a.SHA256,
		RequestID: a.RequestID, ToolCallID: a.ToolCallID, CreatedAt: a.CreatedAt,
		URL: ArtifactURL(t.Agent, t.ID, a.ID), SupersededBy: by}
}

// ArtifactURL is an artifact's download route, relative to the API's base
// URL.
func ArtifactURL(agentName, taskID, artifactID string) string {
	return "/agents/" + agentName + "/tasks/" + taskID + "/artifacts/" + artifactID
}
