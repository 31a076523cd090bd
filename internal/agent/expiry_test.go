package agent

import (
	"testing"
	"time"
)

// TestExpiryAfterIsWholeSeconds: an expiry is the ttl after now rounded up
// to a whole second, so that its view (RFC 3339, seconds) and every copy
// read from it (a caller's of a remote's pause) are the same instant: a
// copy truncated a second early ended a chain the remote still took
// decisions in (the torture test, seed 811358580).
func TestExpiryAfterIsWholeSeconds(t *testing.T) {
	base := time.Date(2026, 11, 28, 9, 4, 6, 0, time.UTC)
	for _, tc := range []struct {
		now  time.Time
		ttl  time.Duration
		want time.Time
	}{
		{base, time.Second, base.Add(time.Second)},
		{base.Add(890 * time.Millisecond), time.Second, base.Add(2 * time.Second)},
		{base.Add(time.Nanosecond), time.Hour, base.Add(time.Hour + time.Second)},
	} {
		got := expiryAfter(tc.now, tc.ttl)
		if !got.Equal(tc.want) {
			t.Errorf("expiryAfter(%s, %s) = %s, want %s", tc.now.Format(time.RFC3339Nano), tc.ttl, got.Format(time.RFC3339Nano), tc.want)
		}
		view, err := time.Parse(time.RFC3339, got.UTC().Format(time.RFC3339))
		if err != nil || !view.Equal(got) {
			t.Errorf("the view of %s reads back as %s (%v)", got.Format(time.RFC3339Nano), view, err)
		}
	}
}
