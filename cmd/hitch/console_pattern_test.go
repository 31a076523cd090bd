package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hitch-agents/hitch/internal/chromium"
)

// TestConsoleHostilePattern: a question whose schema holds a pattern a
// backtracking engine takes exponential time on, answered in a real
// headless Chromium with the input that would freeze it: the console
// never evaluates the pattern, sends the answer, and shows the server's
// 400 (RE2 checked it in linear time) naming the field.
func TestConsoleHostilePattern(t *testing.T) {
	ctx := chromium.New(t, 1280, 1000)
	agentsDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(agentsDir, "asker.yaml"), []byte(askerAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(agentsDir, "sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	base, _, _ := startServe(t, "--agents", agentsDir)
	p := &browserPage{t: t, ctx: ctx, dir: chromium.ArtifactDir(t), start: time.Now()}
	watchConsole(t, ctx)
	const q = `#approvals article.card.input[data-kind=question]`
	const bar = `#approvals .round-bar`

	p.do(chromedp.Navigate(base + "/console/"))
	p.wait("the console to start", `document.body.dataset.ready === 'true'`)
	p.do(chromedp.Click("#settings summary"), chromedp.SetValue("#user", "alice"), chromedp.Click(`#settings-form button[type=submit]`))
	p.wait("asker", `document.body.dataset.ready === 'true' && !!document.querySelector('#agents a[href="#/agents/asker"]')`)
	p.do(chromedp.Click(`#agents a[href="#/agents/asker"]`))
	p.wait("asker's chat", `document.getElementById('chat-h').textContent.startsWith('asker')`)
	n := p.send(`/call ask_user {"question":"Your code?","schema":{"type":"object","properties":{"code":{"type":"string","title":"Code","pattern":"^(x+x+)+y$"}},"required":["code"]}}`)
	p.waitDone(n)
	p.wait("the question's form", `!!document.querySelector('`+q+` input[name=code]')`)
	p.do(chromedp.SendKeys(q+" input[name=code]", strings.Repeat("x", 32)), chromedp.Click(bar+" button.send-round"))
	p.wait("the server's refusal", `document.querySelector('`+bar+` .errors')?.textContent.startsWith('The server refused the answers: ')`)
	if refusal := p.text(bar + " .errors"); !strings.Contains(refusal, "code") {
		t.Errorf("refusal = %q, want the server's invalid_input message naming code", refusal)
	}
	p.shot("pattern-refused")
}
