package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hitch-agents/hitch/internal/chromium"
)

// pixelPNG is a 1x1 PNG.
var pixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==")

// The console lists a task's artifacts: a png inline (an <img> of its
// bytes), an agent-made HTML page only as a download — it never runs — and
// the download saves the bytes.
func TestConsoleArtifacts(t *testing.T) {
	ctx := chromium.New(t, 1280, 900)
	base, sandbox, _ := startServe(t)
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sandbox, "chart.png"), pixelPNG, 0o644); err != nil {
		t.Fatal(err)
	}
	evil := `<script>window.top.pwned = 1</script><img src=x onerror="window.top.pwned = 2">`
	code, body := call(t, "POST", base+"/agents/assistant/invoke", "alice",
		`{"items":[{"content":"/call save_artifact {\"name\": \"chart.png\", \"from_path\": \"chart.png\"}\n/call save_artifact {\"name\": \"page.html\", \"content\": \"`+strings.ReplaceAll(strings.ReplaceAll(evil, `\`, `\\\\`), `"`, `\\\"`)+`\", \"media_type\": \"text/html\"}"}]}`)
	res := decode(t, body)
	if code != 200 || !strings.Contains(res["output"].(string), `Saved artifact "page.html"`) {
		t.Fatalf("invoke: %d %s", code, body)
	}
	tid := res["task_id"].(string)

	p := &browserPage{t: t, ctx: ctx, dir: chromium.ArtifactDir(t), start: time.Now()}
	p.do(chromedp.Navigate(base + "/console/"))
	p.wait("the console to start", `document.body.dataset.ready === 'true'`)
	p.do(chromedp.Click("#settings summary"), chromedp.SetValue("#user", "alice"), chromedp.Click(`#settings-form button[type=submit]`))
	p.wait("the agents", `document.querySelectorAll('#agents a').length > 0`)
	p.do(chromedp.Navigate(base + "/console/#/agents/assistant/tasks/" + tid))
	p.wait("the artifacts", `document.querySelectorAll('#artifacts li.artifact').length === 2`)
	p.wait("the png inline", `(() => { const i = document.querySelector('#artifacts img.artifact-image'); return !!i && i.complete && i.naturalWidth === 1; })()`)
	p.shot("artifacts")
	if got := evalJS[int](p, `document.querySelectorAll('#artifacts img').length`); got != 1 {
		t.Errorf("%d images shown, want 1 (the png)", got)
	}
	if got := evalJS[string](p, `document.querySelector('#artifacts img').src.slice(0, 5)`); got != "blob:" {
		t.Errorf("the image's src starts %q, want a blob: URL", got)
	}
	html := `[...document.querySelectorAll('#artifacts li')].find((li) => li.textContent.includes('page.html'))`
	if got := evalJS[string](p, html+`.textContent`); !strings.Contains(got, "text/html") || !strings.Contains(got, "Download") {
		t.Errorf("the html artifact shows %q, want its type and a Download button", got)
	}
	if got := evalJS[int](p, `document.querySelectorAll('iframe, object, embed').length`); got != 0 {
		t.Errorf("%d frames on the page: an artifact was rendered", got)
	}
	// Download it: the bytes arrive as a file, and nothing of it runs.
	got := evalJS[string](p, `(async () => {
		const bytes = new Promise((resolve) => {
			const orig = URL.createObjectURL;
			URL.createObjectURL = (b) => { URL.createObjectURL = orig; b.text().then(resolve); return orig(b); };
		});
		const name = new Promise((resolve) => {
			const orig = HTMLAnchorElement.prototype.click;
			HTMLAnchorElement.prototype.click = function () { HTMLAnchorElement.prototype.click = orig; resolve(this.download); };
		});
		`+html+`.querySelector('button').click();
		return (await name) + ' ' + (await bytes);
	})()`)
	if got != "page.html "+evil {
		t.Errorf("the download gave %q, want page.html and its bytes", got)
	}
	time.Sleep(200 * time.Millisecond)
	if pwned := evalJS[bool](p, `window.pwned !== undefined`); pwned {
		t.Error("the agent-made HTML ran on the console's origin")
	}
}
