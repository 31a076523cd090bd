package agent

import (
	"encoding/base64"
	"net/http"
	"strings"
	"unicode/utf8"
)

// InputItem is one item of a UserMessage as the client sent it.
type InputItem struct {
	ContentType string `json:"content_type"`
	Content     string `json:"content"`
}

// Limits of a UserMessage (docs/api.md).
const (
	MaxImageBytes    = 3_750_000 // 3.75 MB decoded
	MaxMetadataKeys  = 64
	MaxMetadataBytes = 8 << 10
)

var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// UserContent validates a UserMessage's items and returns them as blocks.
func UserContent(items []InputItem) ([]Block, error) {
	if len(items) == 0 {
		return nil, Errorf(CodeInvalidItems, "items must hold at least one item")
	}
	out := make([]Block, 0, len(items))
	for i, it := range items {
		switch it.ContentType {
		case "", BlockText:
			if strings.TrimSpace(it.Content) == "" {
				return nil, Errorf(CodeInvalidItems, "items[%d].content must not be empty", i)
			}
			if !utf8.ValidString(it.Content) {
				return nil, Errorf(CodeInvalidItems, "items[%d].content must be valid UTF-8", i)
			}
			out = append(out, TextBlock(it.Content))
		case BlockImage:
			b, err := decodeImage(i, it.Content)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		default:
			return nil, Errorf(CodeInvalidContentType, "items[%d].content_type %q is not text or image", i, it.ContentType)
		}
	}
	return out, nil
}

func decodeImage(i int, uri string) (Block, error) {
	rest, ok := strings.CutPrefix(uri, "data:")
	meta, data, ok2 := strings.Cut(rest, ",")
	mediaType, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !ok2 || !isB64 {
		return Block{}, Errorf(CodeInvalidImage, "items[%d].content must be a data URI: data:image/png;base64,...", i)
	}
	mediaType = strings.ToLower(mediaType)
	if !imageTypes[mediaType] {
		return Block{}, Errorf(CodeInvalidImage, "items[%d]: media type %q is not image/png, image/jpeg, image/gif or image/webp", i, mediaType)
	}
	if base64.StdEncoding.DecodedLen(len(data)) > MaxImageBytes+3 {
		return Block{}, Errorf(CodeInvalidImage, "items[%d]: the image is over 3.75 MB", i)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Block{}, Errorf(CodeInvalidImage, "items[%d]: the image's base64 does not decode", i)
	}
	if len(raw) > MaxImageBytes {
		return Block{}, Errorf(CodeInvalidImage, "items[%d]: the image is over 3.75 MB", i)
	}
	if got := http.DetectContentType(raw); got != mediaType {
		return Block{}, Errorf(CodeInvalidImage, "items[%d]: the data is not an image of type %s", i, mediaType)
	}
	return Block{Type: BlockImage, MediaType: mediaType, Data: raw}, nil
}

// CheckMetadata checks a metadata map against the limits.
func CheckMetadata(md map[string]string) error {
	if len(md) > MaxMetadataKeys {
		return Errorf(CodeInvalidMetadata, "metadata has %d keys; at most %d are allowed", len(md), MaxMetadataKeys)
	}
	size := 0
	for k, v := range md {
		if k == "" {
			return Errorf(CodeInvalidMetadata, "metadata keys must not be empty")
		}
		size += len(k) + len(v)
	}
	if size > MaxMetadataBytes {
		return Errorf(CodeInvalidMetadata, "metadata is %d bytes; at most %d are allowed", size, MaxMetadataBytes)
	}
	return nil
}
