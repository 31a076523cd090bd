package main

import (
	"io"
	"strings"
	"unicode/utf8"
)

// termWriter is hitch chat's terminal: every text it prints that Hitch did
// not write — answers, questions, titles, tool calls and results, MCP
// messages, a remote agent's text, error messages — may come from a model,
// an MCP server or a remote agent, so what a terminal would act on is
// replaced (termSafe) before it reaches the terminal (docs/api.md,
// "Pauses for input": schemas from outside are data). Hitch's own escapes
// (the dim of reasoning) go to the terminal past it.
type termWriter struct{ w io.Writer }

func (t termWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// termSafe replaces, with U+FFFD, each escape sequence (ESC and what
// follows it: CSI, OSC, DCS and other string sequences up to their end, or
// the one character after ESC), each C0 control character but newline and
// tab, DEL, each C1 control character (U+0080–U+009F, which a terminal may
// read as CSI and the like), each bidirectional formatting character (the
// overrides and isolates that reorder what is shown) and each byte that is
// not UTF-8.
func termSafe(s string) string {
	if isTermSafe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			b.WriteRune(utf8.RuneError)
			continue
		case r == utf8.RuneError && size <= 1, unsafeRune(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func isTermSafe(s string) bool {
	for _, r := range s {
		if r == 0x1b || r == utf8.RuneError || unsafeRune(r) {
			return false
		}
	}
	return true
}

// unsafeRune: a control character a terminal acts on, or a bidirectional
// formatting character.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// escapeLen is the length of the escape sequence at the start of s (s[0]
// is ESC).
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters, intermediates, a final byte
		i := 2
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			i++
		}
		return i
	case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS: up to BEL or ST
		for i := 2; i < len(s); i++ {
			switch {
			case s[i] == 0x07:
				return i + 1
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2
			case s[i] == '\n':
				return i // a string never runs past the line
			}
		}
		return len(s)
	}
	if s[1] >= 0x20 && s[1] <= 0x7e {
		return 2
	}
	return 1
}
