package console_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/hitch-agents/hitch/internal/chromium"
	"github.com/hitch-agents/hitch/internal/console"
)

// The cards of pending inputs (inputs.js), built in a real Chromium from
// pending inputs as the API gives them, filled in with the page's own
// controls (clicks, values), and read back as the decision a resume
// carries. The kind elicitation is tested here, from its documented shape:
// its form runs the same code as a question's or a client tool's schema
// (cmd/hitch's TestConsoleInputs answers those against the server).
func TestInputCards(t *testing.T) {
	ctx := chromium.New(t, 800, 600)
	srv := httptest.NewServer(console.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/console/missing")); err != nil {
		t.Fatal(err)
	}
	// card builds the card of call on an empty page and runs steps (a
	// function body of card, root, q = root.querySelector, set(selector,
	// value), click(selector)), answering what it returns.
	card := func(t *testing.T, call map[string]any, steps string, out any) {
		t.Helper()
		a, _ := json.Marshal(call)
		js := `(async (call) => {
			const { inputCard } = await import('/console/inputs.js');
			const card = inputCard(call);
			document.body.replaceChildren(card.root);
			const root = card.root;
			const q = (s) => root.querySelector(s);
			const set = (s, v) => { q(s).value = v; q(s).dispatchEvent(new Event('input', { bubbles: true })); };
			const click = (s) => q(s).click();
			const out = await (async () => {` + steps + `})();
			return JSON.stringify(out);
		})(` + string(a) + `)`
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(v), out); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	type result struct {
		Decision map[string]any `json:"decision"`
		Errors   []string       `json:"errors"`
	}
	check := func(t *testing.T, what string, got, want result) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	answer := func(v any) result { return result{Decision: map[string]any{"action": "answer", "result": v}} }

	form := map[string]any{
		"tool_call_id": "e1", "name": "signup", "kind": "elicitation", "server": "https://mcp.example.com/mcp",
		"question": "Tell us about you", "expires_at": "2099-01-01T00:00:00Z", "round": 1,
		"schema": map[string]any{
			"type": "object", "required": []string{"name", "plan"},
			"properties": map[string]any{
				"name":  map[string]any{"type": "string", "title": "Name", "minLength": 1},
				"age":   map[string]any{"type": "integer", "minimum": 0},
				"score": map[string]any{"type": "number", "default": 0.5},
				"vip":   map[string]any{"type": "boolean"},
				"plan": map[string]any{"type": "string", "oneOf": []any{
					map[string]any{"const": "free", "title": "Free"}, map[string]any{"const": "pro", "title": "Pro"}}},
				"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []string{"a", "b", "c"}}},
				"email": map[string]any{"type": "string", "format": "email"},
			},
		},
	}

	t.Run("elicitation form", func(t *testing.T) {
		var got struct {
			Head, Message string
			Fields        map[string]string
			Required      []string
			Empty, Bad    result
			Filled        result
		}
		card(t, form, `
			const fields = {};
			for (const f of root.querySelectorAll('.field')) {
				const c = f.querySelector('select') || f.querySelector('fieldset') || f.querySelector('input');
				fields[f.dataset.field] = c.tagName === 'SELECT' ? 'select:' + [...c.options].map((o) => o.text).join('|')
					: c.tagName === 'FIELDSET' ? 'checkboxes:' + [...c.querySelectorAll('label')].map((l) => l.textContent).join('|')
					: c.type + (c.type !== "checkbox" && c.step ? ':step=' + c.step : '') + (c.min ? ':min=' + c.min : '') + (c.type !== "checkbox" && c.value ? ':value=' + c.value : '');
			}
			const required = [...root.querySelectorAll('.field')].filter((f) => f.querySelector('.req')).map((f) => f.dataset.field);
			const Empty = card.collect();
			set('input[name=name]', 'Ada');
			set('input[name=age]', '-1');
			q('select[name=plan]').value = '1';
			const Bad = card.collect();
			set('input[name=age]', '41');
			click('input[name=vip]');
			click('[data-field=tags] input[value="0"]');
			click('[data-field=tags] input[value="2"]');
			return { Head: q('h3').textContent, Message: q('.question').textContent, Fields: fields, Required: required,
				Empty, Bad, Filled: card.collect() };`, &got)
		if got.Head != "signup — a server asks you (https://mcp.example.com/mcp)" || got.Message != "Tell us about you" {
			t.Errorf("head %q, message %q", got.Head, got.Message)
		}
		wantFields := map[string]string{
			"name": "text", "age": "number:step=1:min=0", "score": "number:step=any:value=0.5", "vip": "checkbox",
			"plan": "select:Choose…|Free|Pro", "tags": "checkboxes:a|b|c", "email": "email",
		}
		if diff := cmp.Diff(wantFields, got.Fields); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
		if !cmp.Equal(got.Required, []string{"name", "plan"}) {
			t.Errorf("required marks on %q, want name and plan", got.Required)
		}
		check(t, "nothing filled in", got.Empty, result{Errors: []string{"Name: is required", "plan: is required"}})
		check(t, "an age below its minimum", got.Bad, result{Errors: []string{"answer.age: must be ≥ 0"}})
		check(t, "filled in", got.Filled, answer(map[string]any{"action": "accept", "content": map[string]any{
			"name": "Ada", "age": 41.0, "score": 0.5, "vip": true, "plan": "pro", "tags": []any{"a", "c"}}}))
	})

	t.Run("elicitation decline", func(t *testing.T) {
		var got struct{ Declined, Changed result }
		card(t, form, `
			click('button.decline');
			const Declined = card.collect();
			const disabled = q('input[name=name]').disabled;
			click('button.change');
			if (!disabled || q('input[name=name]').disabled) return {};
			return { Declined, Changed: card.collect() };`, &got)
		check(t, "declined", got.Declined, answer(map[string]any{"action": "decline"}))
		check(t, "changed back", got.Changed, result{Errors: []string{"Name: is required", "plan: is required"}})
	})

	t.Run("elicitation URL", func(t *testing.T) {
		var got struct {
			Href, Target, Rel, Text string
			Schema                  bool
			Before, Done            result
		}
		card(t, map[string]any{"tool_call_id": "e2", "name": "connect", "kind": "elicitation", "question": "Sign in to go on",
			"url": "https://auth.example.com/consent?state=x", "server": "https://mcp.example.com/mcp"}, `
			const a = q('a');
			const Before = card.collect();
			click('button.done');
			return { Href: a.getAttribute('href'), Target: a.target, Rel: a.rel, Text: q('.link').textContent,
				Schema: !!q('.schema-form'), Before, Done: card.collect() };`, &got)
		if got.Href != "https://auth.example.com/consent?state=x" || got.Target != "_blank" || got.Rel != "noopener noreferrer" {
			t.Errorf("link href %q target %q rel %q", got.Href, got.Target, got.Rel)
		}
		if got.Text != "Open https://auth.example.com/consent?state=x (auth.example.com, in a new tab), finish there, then press Done." || got.Schema {
			t.Errorf("text %q, form %v", got.Text, got.Schema)
		}
		check(t, "before Done", got.Before, result{Errors: []string{"Open the link, finish there, then press Done (or Decline)."}})
		check(t, "Done", got.Done, answer(map[string]any{"action": "accept"}))
	})

	for _, url := range []string{"javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd", "not a url"} {
		t.Run("elicitation URL not a web link: "+url, func(t *testing.T) {
			var got struct {
				Links int
				Code  string
			}
			card(t, map[string]any{"tool_call_id": "e3", "name": "connect", "kind": "elicitation", "question": "Go", "url": url},
				`return { Links: root.querySelectorAll('a').length, Code: q('.link code')?.textContent };`, &got)
			if got.Links != 0 || got.Code != url {
				t.Errorf("%d links, code %q; want no link, the address as text", got.Links, got.Code)
			}
		})
	}

	t.Run("question with choices", func(t *testing.T) {
		var got struct {
			Choices       []string
			None, Picked  result
			Pressed       []string
			DeclineExists bool
		}
		card(t, map[string]any{"tool_call_id": "q1", "name": "ask_user", "kind": "question", "question": "Which?",
			"choices": []string{"a", "b"}, "input": map[string]any{"question": "Which?", "choices": []string{"a", "b"}}}, `
			const None = card.collect();
			click('button.choice[data-choice=a]');
			click('button.choice[data-choice=b]');
			return { Choices: [...root.querySelectorAll('button.choice')].map((b) => b.textContent), None,
				Pressed: [...root.querySelectorAll('button.choice[aria-pressed=true]')].map((b) => b.textContent),
				Picked: card.collect() };`, &got)
		if !cmp.Equal(got.Choices, []string{"a", "b"}) || !cmp.Equal(got.Pressed, []string{"b"}) {
			t.Errorf("choices %q, pressed %q", got.Choices, got.Pressed)
		}
		check(t, "none picked", got.None, result{Errors: []string{"Pick one of the choices."}})
		check(t, "picked", got.Picked, answer("b"))
	})

	t.Run("question declined with a reason", func(t *testing.T) {
		var got struct{ Declined result }
		card(t, map[string]any{"tool_call_id": "q2", "name": "ask_user", "kind": "question", "question": "Why?"}, `
			click('button.decline');
			set('input[name=reason]', 'not now');
			q('form.decline-form').requestSubmit();
			return { Declined: card.collect() };`, &got)
		check(t, "declined", got.Declined, result{Decision: map[string]any{"action": "reject", "reason": "not now"}})
	})

	t.Run("free question", func(t *testing.T) {
		var got struct{ Empty, Typed result }
		card(t, map[string]any{"tool_call_id": "q3", "name": "ask_user", "kind": "question", "question": "Why?"}, `
			const Empty = card.collect();
			set('textarea[name=answer]', 'because');
			return { Empty, Typed: card.collect() };`, &got)
		check(t, "empty", got.Empty, result{Errors: []string{"Write an answer (or decline)."}})
		check(t, "typed", got.Typed, answer("because"))
	})

	// A schema the form cannot render (a nested object, a union type) and
	// a client tool without one: JSON.
	for _, tc := range []struct {
		name   string
		schema any
		text   string
		want   result
	}{
		{"nested object", map[string]any{"type": "object", "properties": map[string]any{"at": map[string]any{"type": "object"}}}, `{"at": {"x": 1}}`,
			answer(map[string]any{"at": map[string]any{"x": 1.0}})},
		{"union type", map[string]any{"type": []string{"string", "number"}}, `7`, answer(7.0)},
		{"array of objects", map[string]any{"type": "array", "items": map[string]any{"type": "object"}}, `[{}]`, answer([]any{map[string]any{}})},
		{"no schema", nil, `"anything"`, answer("anything")},
		{"not JSON", nil, `nope`, result{Errors: []string{"Not JSON: "}}},
		{"checked against the schema", map[string]any{"type": "array", "items": map[string]any{"type": "object"}, "maxItems": 1}, `[{}, {}]`,
			result{Errors: []string{"answer: must have at most 1 items"}}},
	} {
		t.Run("JSON: "+tc.name, func(t *testing.T) {
			var got struct {
				Fields int
				Label  string
				R      result
			}
			call := map[string]any{"tool_call_id": "c1", "name": "locate", "kind": "client", "input": map[string]any{}}
			if tc.schema != nil {
				call["schema"] = tc.schema
			}
			card(t, call, `set('textarea[name=json]', `+jsString(tc.text)+`);
				const R = card.collect();
				if (R.errors) R.errors = R.errors.map((e) => e.startsWith('Not JSON: ') ? 'Not JSON: ' : e);
				return { Fields: root.querySelectorAll('.field').length, Label: q('label').firstChild.textContent, R };`, &got)
			if got.Fields != 0 || !strings.HasPrefix(got.Label, "Result of locate (JSON") {
				t.Errorf("%d fields, label %q; want the JSON text area", got.Fields, got.Label)
			}
			check(t, "answer", got.R, tc.want)
		})
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
