package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCitationsNameSections: every comment, document and definition that
// cites a section of a document here — `docs/api.md, "Cancel"`,
// `architecture.md Orchestration`, `notifications.md#direct-operations-…` — names
// a heading that exists, so a reader following it lands where it says
// (issue: 19 citations of sections that had moved or never existed). A
// citation may wrap across comment lines. Documents that are not ours
// (another project's `docs/…md`) are not checked.
func TestCitationsNameSections(t *testing.T) {
	root := ".."
	heads := map[string][]string{} // document name (no .md) → its headings
	for _, dir := range []string{".", "guide"} {
		mds, _ := filepath.Glob(filepath.Join(dir, "*.md"))
		for _, p := range mds {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(filepath.Base(p), ".md")
			for _, line := range strings.Split(string(b), "\n") {
				if m := headingRE.FindStringSubmatch(line); m != nil {
					heads[name] = append(heads[name], strings.TrimSpace(m[1]))
				}
			}
		}
	}
	total, dead := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "tools", "testdata", "vendor":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(p)
		if ext != ".go" && ext != ".md" && ext != ".yaml" && ext != ".js" {
			return nil
		}
		if d.Name() == "citations_test.go" {
			return nil // its own examples
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// A citation may wrap: comment markers at the start of a line
		// join it to the line before. starts[i] is where line i+1 begins
		// in the joined text.
		var text strings.Builder
		var starts []int
		for i, line := range strings.Split(string(b), "\n") {
			starts = append(starts, text.Len())
			if i > 0 {
				text.WriteByte(' ')
				line = markRE.ReplaceAllString(line, "")
			}
			text.WriteString(line)
		}
		lineOf := func(off int) int {
			n, _ := slices.BinarySearch(starts, off+1)
			return n
		}
		joined := text.String()
		for _, m := range citeRE.FindAllStringSubmatchIndex(joined, -1) {
			text := joined
			name := text[m[2]:m[3]]
			hs, ours := heads[name]
			if !ours {
				continue
			}
			var ok bool
			switch {
			case m[4] >= 0: // #anchor
				ok = hasAnchor(hs, text[m[4]:m[5]])
			case m[6] >= 0: // "Section"
				ok = hasHeading(hs, text[m[6]:m[7]])
			case m[8] >= 0 && (name == "api" || name == "architecture"): // a bare Section word
				w := strings.ToLower(strings.Fields(text[m[8]:m[9]])[0])
				if w == "and" || w == "for" || w == "the" {
					continue
				}
				ok = false
				for _, h := range hs {
					if strings.Contains(strings.ToLower(h), w) {
						ok = true
					}
				}
			default:
				continue
			}
			total++
			if !ok {
				dead++
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: %q names no section of %s.md", rel, lineOf(m[0]), text[m[0]:m[1]], name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total < 100 {
		t.Errorf("%d citations found, %d dead: fewer than expected, the pattern may have stopped matching", total, dead)
	}
}

var (
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	markRE    = regexp.MustCompile(`^[ \t]*(//|#|\*)?[ \t]*`)
	// docs/guide/notifications.md, "Direct operations" | api.md#errors |
	// architecture.md Orchestration
	citeRE = regexp.MustCompile(`([a-z][a-z-]*)\.md(?:#([\w-]+)|,?\s*"([^"]+)"|\s+([A-Z][a-z]+))`)
)

func hasHeading(hs []string, q string) bool {
	q = strings.ToLower(strings.TrimSpace(q))
	for _, h := range hs {
		h = strings.ToLower(strings.Trim(h, "`"))
		if strings.HasPrefix(h, q) || strings.HasPrefix(q, h) {
			return true
		}
	}
	return false
}

func hasAnchor(hs []string, a string) bool {
	for _, h := range hs {
		if slug(h) == a {
			return true
		}
	}
	return false
}

// slug is a heading's anchor as GitHub makes it.
func slug(h string) string {
	h = strings.ToLower(h)
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
