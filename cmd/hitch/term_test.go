package main

import "testing"

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, ünïcode ✓\n\ttab", "plain text, ünïcode ✓\n\ttab"},
		{"a\x1b]0;pwned\x07b", "a\ufffdb"},
		{"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "a\ufffdlink\ufffdb"},
		{"\x1b[2J\x1b[1;31mred\x1b[0m", "\ufffd\ufffdred\ufffd"},
		{"\x1bPq#0;2;0;0;0\x1b\\ok", "\ufffdok"},
		{"esc\x1bc at the end\x1b", "esc\ufffd at the end\ufffd"},
		{"bell\a cr\r del\x7f", "bell\ufffd cr\ufffd del\ufffd"},
		{"c1 \u009b31m x", "c1 \ufffd31m x"},
		{"a\u202eexe.txt \u2066iso\u2069", "a\ufffdexe.txt \ufffdiso\ufffd"},
		{"bad \xff\xfe utf-8", "bad \ufffd\ufffd utf-8"},
		{"osc to the line's end \x1b]0;title\nnext", "osc to the line's end \ufffd\nnext"},
	} {
		if got := termSafe(tc.in); got != tc.want {
			t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
