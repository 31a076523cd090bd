// Package glob compiles the path globs of approval rules (docs/guide/configuration.md, "Agent definitions"
// Conditional approval). In a glob:
//
//	glob      matches
//	"*"       any run of characters but "/"
//	"**"      any run of characters, "/" included
//	"**/"     zero or more whole path segments ("**/x.log" matches "x.log" and "a/b/x.log")
//	"/**"     at the end: the path itself or anything below it
//	          ("reports/**" matches "reports" and "reports/2026/q1.csv")
//	"?"       one character but "/"
//	"[abc]"   one of the characters; "[a-z]" a range; "[!abc]" or "[^abc]" none of them
//	"\x"      the character x itself
//
// Everything else matches itself. A glob matches the whole value. Three or
// more stars in a row, an unclosed or empty class and a trailing backslash
// are errors.
package glob

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Glob is a compiled glob.
type Glob struct {
	src string
	re  *regexp.Regexp
}

// Compile compiles a glob; the error says what is wrong and where.
func Compile(pattern string) (*Glob, error) {
	if pattern == "" {
		return nil, errors.New("the glob is empty")
	}
	var b strings.Builder
	b.WriteString(`\A`)
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch c {
		case '*':
			n := 1
			for i+n < len(rs) && rs[i+n] == '*' {
				n++
			}
			if n > 2 {
				return nil, fmt.Errorf("%q: %d stars in a row at %d; use * (within a segment) or ** (across /)", pattern, n, i)
			}
			if n == 1 {
				b.WriteString(`[^/]*`)
				continue
			}
			startSeg := i == 0 || rs[i-1] == '/'
			switch {
			case startSeg && i+2 < len(rs) && rs[i+2] == '/':
				b.WriteString(`(?:.*/)?`)
				i += 2
			case i > 0 && rs[i-1] == '/' && i+2 == len(rs):
				// "x/**": x itself too. The "/" was written already.
				s := b.String()
				b.Reset()
				b.WriteString(strings.TrimSuffix(s, "/"))
				b.WriteString(`(?:/.*)?`)
				i++
			default:
				b.WriteString(`.*`)
				i++
			}
		case '?':
			b.WriteString(`[^/]`)
		case '[':
			end, class, err := parseClass(rs, i)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", pattern, err)
			}
			b.WriteString(class)
			i = end
		case '\\':
			if i+1 == len(rs) {
				return nil, fmt.Errorf("%q: a trailing backslash escapes nothing", pattern)
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`\z`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("%q: %v", pattern, err)
	}
	return &Glob{src: pattern, re: re}, nil
}

// parseClass reads the class starting at rs[i] == '['.
func parseClass(rs []rune, i int) (int, string, error) {
	start := i
	i++
	var b strings.Builder
	b.WriteString("[")
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		b.WriteString("^/")
		i++
	}
	n := 0
	for ; i < len(rs) && rs[i] != ']'; i++ {
		c := rs[i]
		if c == '\\' {
			if i+1 == len(rs) {
				return 0, "", fmt.Errorf("the class at %d is not closed", start)
			}
			i++
			c = rs[i]
		}
		if c == '-' && n > 0 && i+1 < len(rs) && rs[i+1] != ']' {
			b.WriteString("-")
			continue
		}
		b.WriteString(regexp.QuoteMeta(string(c)))
		n++
	}
	if i == len(rs) {
		return 0, "", fmt.Errorf("the class at %d is not closed", start)
	}
	if n == 0 {
		return 0, "", fmt.Errorf("the class at %d is empty", start)
	}
	b.WriteString("]")
	return i, b.String(), nil
}

// Match tells whether s matches the whole glob.
func (g *Glob) Match(s string) bool { return g.re.MatchString(s) }

// String is the glob as written.
func (g *Glob) String() string { return g.src }
