package a2a

import (
	"context"
	"io"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/hitch-agents/hitch/internal/agent"
)

// RawArtifactLimit: an artifact smaller than this travels in its A2A
// artifact as raw bytes; a larger one as a file part with the URL of its
// download route (which needs the caller's token, like every route).
const RawArtifactLimit = 64 << 10

// artifactsOf are the A2A artifacts of request rid: each artifact its tool
// calls made, beside the answer's "output".
func (h *handler) artifactsOf(ctx context.Context, v *agent.TaskView, rid string) []*a2a.Artifact {
	var out []*a2a.Artifact
	for _, a := range v.Artifacts {
		if a.RequestID != rid {
			continue
		}
		out = append(out, &a2a.Artifact{ID: a2a.ArtifactID(a.ID), Name: a.Name, Parts: a2a.ContentParts{h.artifactPart(ctx, v.TaskID, a)}})
	}
	return out
}

// artifactPart is an artifact as an A2A file part: raw under
// RawArtifactLimit (when its bytes read), else the download URL.
func (h *handler) artifactPart(ctx context.Context, taskID string, a agent.ArtifactView) *a2a.Part {
	if a.Size < RawArtifactLimit {
		if _, rc, err := h.e.OpenArtifact(ctx, h.agent, h.user, taskID, a.ID); err == nil {
			b, err := io.ReadAll(io.LimitReader(rc, RawArtifactLimit))
			rc.Close()
			if err == nil && int64(len(b)) == a.Size {
				p := a2a.NewRawPart(b)
				p.MediaType, p.Filename = a.MediaType, a.Name
				return p
			}
		}
	}
	p := a2a.NewFileURLPart(a2a.URL(h.base+a.URL), a.MediaType)
	p.Filename = a.Name
	return p
}

// artifactEvent is an artifact event as an A2A artifact update: a file
// part with its download URL (the stream reads no bytes).
func (c *converter) artifactEvent(d struct {
	ID        string `json:"artifact_id"`
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
}) *a2a.TaskArtifactUpdateEvent {
	p := a2a.NewFileURLPart(a2a.URL(c.base+agent.ArtifactURL(c.agent, c.taskID, d.ID)), d.MediaType)
	p.Filename = d.Name
	return &a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(c.rid), ContextID: c.taskID, LastChunk: true,
		Artifact: &a2a.Artifact{ID: a2a.ArtifactID(d.ID), Name: d.Name, Parts: a2a.ContentParts{p}}}
}
