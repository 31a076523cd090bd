package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hitch-agents/hitch/internal/schema"
)

// chat is a terminal client: each line is a message to one task, answers
// stream as they come, and a call that needs approval is asked about.
func chat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hitch chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", envOr("HITCH_URL", defaultURL), "the API's base URL (default: $HITCH_URL, else "+defaultURL+")")
	agentName := fs.String("agent", "assistant", "the agent to talk to")
	token := fs.String("token", "dev", "the bearer token (with dev auth: the user id)")
	a2aURL := fs.String("a2a", "", "talk to any A2A agent instead: its base URL (the Agent Card is at URL/.well-known/agent-card.json), e.g. http://127.0.0.1:8080/a2a/assistant")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw := stdout
	stdout = termWriter{raw} // what the agents, servers and remote agents said, made safe
	if *a2aURL != "" {
		return chatA2A(ctx, *a2aURL, *token, bufio.NewScanner(stdin), stdout)
	}
	c := &chatClient{ctx: ctx, base: strings.TrimRight(*base, "/"), agent: *agentName, token: *token,
		in: readLines(stdin), out: stdout, raw: raw}
	fmt.Fprintf(stdout, "hitch chat with %s at %s; /quit to leave\n", c.agent, c.base)
	for {
		fmt.Fprint(stdout, "> ")
		line, err := c.readLine()
		if err != nil {
			return nil
		}
		switch {
		case line == "":
			continue
		case line == "/quit":
			return nil
		}
		// Lines may carry the local model's commands; "\n" starts a new line.
		body := map[string]any{"items": []map[string]string{{"content": strings.ReplaceAll(line, `\n`, "\n")}}}
		if c.taskID != "" {
			body["task_id"] = c.taskID
		}
		if err := c.stream("/agents/"+c.agent+"/invoke", body); err != nil {
			if errors.Is(err, errInterrupted) {
				return nil
			}
			fmt.Fprintln(stdout, "error:", err)
		}
	}
}

// errInterrupted: Ctrl-C (the chat's context ended) at a prompt.
var errInterrupted = errors.New("interrupted")

// interruptReason is the reason sent for what Ctrl-C at a prompt declined.
const interruptReason = "declined in hitch chat: interrupted (Ctrl-C)"

// readLines reads r's lines in the background, so that a prompt can wait
// for a line or for Ctrl-C, whichever comes first.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// readLine is the next line typed, trimmed: io.EOF at the input's end,
// errInterrupted when the chat's context ends first.
func (c *chatClient) readLine() (string, error) {
	select {
	case <-c.ctx.Done():
		return "", errInterrupted
	case line, ok := <-c.in:
		if !ok {
			c.eof = true
			return "", io.EOF
		}
		return strings.TrimSpace(line), nil
	}
}

// interrupted is called when Ctrl-C came at a prompt: the decline that
// follows still goes out (for up to 10 s), so the task is not left Paused.
func (c *chatClient) interrupted() {
	if !c.quitting {
		c.quitting = true
		fmt.Fprintln(c.out, "\n[Ctrl-C: declining, then leaving]")
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 10*time.Second)
		c.ctx, c.stop = ctx, cancel
	}
}

// refusedError is a response other than 200: status, code and message.
type refusedError struct {
	status        int
	code, message string
}

func (e *refusedError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

// resume sends a paused round's decisions, built by ask; after a 400 it
// shows the reason and asks again; after Ctrl-C at a prompt it sends what
// ask declined and ends the chat.
func (c *chatClient) resume(paused map[string]any, ask func() map[string]any) error {
	for {
		body := ask()
		err := c.stream(paused["resume_url"].(string), body)
		if c.quitting {
			if c.stop != nil {
				c.stop()
			}
			if err != nil {
				fmt.Fprintln(c.out, "error:", err)
			}
			return errInterrupted
		}
		var re *refusedError
		if errors.As(err, &re) && re.status == http.StatusBadRequest && !c.eof {
			fmt.Fprintf(c.out, "refused: %s\nagain:\n", re.message)
			continue
		}
		return err
	}
}

type chatClient struct {
	ctx                context.Context
	base, agent, token string
	in                 <-chan string // the lines typed (readLines)
	out                io.Writer     // termWriter: text from elsewhere made safe
	raw                io.Writer     // the terminal, for Hitch's own escapes
	taskID             string
	quitting           bool               // Ctrl-C came at a prompt
	eof                bool               // the input has ended
	stop               context.CancelFunc // the decline's deadline, after Ctrl-C
}

// stream posts body with Accept: text/event-stream and prints the events;
// a pause asks for a decision and streams the resume.
func (c *chatClient) stream(path string, body any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(c.ctx, "POST", c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return &refusedError{status: resp.StatusCode, code: e.Error.Code, message: e.Error.Message}
	}
	var name string
	var paused map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var d map[string]any
		_ = json.Unmarshal([]byte(data), &d)
		switch name {
		case "request_started":
			c.taskID, _ = d["task_id"].(string)
		case "thinking":
			fmt.Fprint(c.raw, "\x1b[2m")
			fmt.Fprint(c.out, d["delta"])
			fmt.Fprint(c.raw, "\x1b[0m")
		case "answer":
			fmt.Fprint(c.out, d["delta"])
		case "tool_call":
			in, _ := json.Marshal(d["input"])
			fmt.Fprintf(c.out, "\n→ %s %s\n", d["name"], in)
		case "tool_result":
			out, _ := json.Marshal(d["output"])
			fmt.Fprintf(c.out, "← %s %s: %s\n", d["name"], d["status"], out)
		case "approved", "rejected", "cancelled", "answered":
			fmt.Fprintf(c.out, "[%s by %s]\n", name, d["by"])
		case "error":
			fmt.Fprintf(c.out, "\n[failed: %s: %s]\n", d["code"], d["message"])
		case "request_complete":
			fmt.Fprintln(c.out)
			if d["status"] == "Paused" {
				paused = d
			}
		}
	}
	if paused == nil {
		return sc.Err()
	}
	return c.decide(paused)
}

// decide asks whether to approve the paused round, then resumes. A round
// holding inputs (docs/api.md, "Pauses for input") asks each of them too,
// and is settled with decisions covering every call.
func (c *chatClient) decide(paused map[string]any) error {
	approvals, _ := paused["pending_approvals"].([]any)
	if inputs, _ := paused["pending_inputs"].([]any); len(inputs) > 0 {
		return c.answer(paused, approvals, inputs)
	}
	return c.resume(paused, func() map[string]any {
		for _, p := range approvals {
			pa := p.(map[string]any)
			in, _ := json.Marshal(pa["input"])
			fmt.Fprintf(c.out, "needs approval: %s %s (until %s)\n", pa["name"], in, pa["expires_at"])
			if rule, ok := pa["rule"].(string); ok {
				fmt.Fprintf(c.out, "  asked by the rule %s\n", rule)
			}
		}
		fmt.Fprint(c.out, "approve? [y/N, a: yes and don't ask again in this task] ")
		action, remember, reason := "reject", false, "rejected in hitch chat"
		switch answer, err := c.readLine(); {
		case errors.Is(err, errInterrupted):
			c.interrupted()
			reason = interruptReason
		case strings.HasPrefix(strings.ToLower(answer), "y"):
			action = "approve"
		case strings.HasPrefix(strings.ToLower(answer), "a"):
			action, remember = "approve", true
		}
		body := map[string]any{"action": action, "round": paused["round"]}
		if remember {
			body["remember"] = "task"
		}
		if action == "reject" {
			body["reason"] = reason
		}
		return body
	})
}

// answer asks for each pending input in the terminal (and, when the round
// holds approvals too, whether to approve them), then resumes with
// decisions for every call. An empty line declines an input.
func (c *chatClient) answer(paused map[string]any, approvals, inputs []any) error {
	return c.resume(paused, func() map[string]any {
		var decisions []map[string]any
		for _, p := range inputs {
			in := p.(map[string]any)
			d := map[string]any{"tool_call_id": in["tool_call_id"]}
			switch {
			case c.quitting:
				d["action"], d["reason"] = "reject", interruptReason
			case in["kind"] == "elicitation":
				d["action"], d["result"] = "answer", c.elicit(in)
			default:
				c.askInput(in, d)
			}
			decisions = append(decisions, d)
		}
		if len(approvals) > 0 {
			action, reason := "reject", "rejected in hitch chat"
			if c.quitting {
				reason = interruptReason
			} else {
				for _, p := range approvals {
					pa := p.(map[string]any)
					args, _ := json.Marshal(pa["input"])
					fmt.Fprintf(c.out, "needs approval: %s %s (until %s)\n", pa["name"], args, pa["expires_at"])
				}
				fmt.Fprint(c.out, "approve? [y/N] ")
				switch line, err := c.readLine(); {
				case errors.Is(err, errInterrupted):
					c.interrupted()
					reason = interruptReason
				case strings.HasPrefix(strings.ToLower(line), "y"):
					action = "approve"
				}
			}
			for _, p := range approvals {
				d := map[string]any{"tool_call_id": p.(map[string]any)["tool_call_id"], "action": action}
				if action == "reject" {
					d["reason"] = reason
				}
				decisions = append(decisions, d)
			}
		}
		// The round always goes with the decisions: a call that asks again in
		// a later round keeps its id (docs/api.md ResumeRequest).
		return map[string]any{"decisions": decisions, "round": paused["round"]}
	})
}

// askInput asks a question or a client tool's result into d, asking again
// until the answer fits the choices or the schema (the server checks the
// same: docs/api.md, "Pauses for input"). An empty line declines.
func (c *chatClient) askInput(in map[string]any, d map[string]any) {
	choices, _ := in["choices"].([]any)
	_, hasSchema := in["schema"]
	var sch *schema.Schema
	if hasSchema {
		raw, _ := json.Marshal(in["schema"])
		sch, _ = schema.Compile(raw) // one that does not compile: the server says so
	}
	if in["kind"] == "question" {
		fmt.Fprintf(c.out, "%s asks: %s\n", in["name"], in["question"])
		for i, ch := range choices {
			fmt.Fprintf(c.out, "  %d. %s\n", i+1, ch)
		}
	} else {
		args, _ := json.Marshal(in["input"])
		fmt.Fprintf(c.out, "the client tool %s %s needs its result", in["name"], args)
		if hasSchema {
			raw, _ := json.Marshal(in["schema"])
			fmt.Fprintf(c.out, " (JSON fitting %s)", raw)
		}
		fmt.Fprintln(c.out)
	}
	for {
		fmt.Fprint(c.out, "answer (empty: decline)> ")
		line, err := c.readLine()
		switch {
		case errors.Is(err, errInterrupted):
			c.interrupted()
			d["action"], d["reason"] = "reject", interruptReason
			return
		case line == "":
			d["action"], d["reason"] = "reject", "declined in hitch chat"
			return
		}
		result := chatResult(line, choices, hasSchema || in["kind"] == "client")
		if problem := checkAnswer(result, choices, sch); problem != "" {
			fmt.Fprintf(c.out, "%s; again:\n", problem)
			continue
		}
		d["action"], d["result"] = "answer", result
		return
	}
}

// checkAnswer is what is wrong with an answer, or "": one of the choices
// when there are any, a value fitting the schema when there is one.
func checkAnswer(result any, choices []any, sch *schema.Schema) string {
	if len(choices) > 0 && !slices.Contains(choices, result) {
		return fmt.Sprintf("not one of the choices: type its number (1 to %d) or the choice itself", len(choices))
	}
	if sch != nil {
		raw, _ := json.Marshal(result)
		if err := sch.Validate(raw, "the answer"); err != nil {
			return err.Error()
		}
	}
	return ""
}

// chatResult is a typed answer as a result: a choice's number picks it;
// where JSON is expected (a schema, a client tool), a line that parses as
// JSON is that value; anything else is the text.
func chatResult(line string, choices []any, wantJSON bool) any {
	var n int
	if _, err := fmt.Sscanf(line, "%d", &n); err == nil && fmt.Sprint(n) == line && n >= 1 && n <= len(choices) {
		return choices[n-1]
	}
	if wantJSON {
		var v any
		if json.Unmarshal([]byte(line), &v) == nil {
			return v
		}
	}
	return line
}

// elicit asks an MCP server's request for input in the terminal: a URL
// to open, then whether it is done; a form field by field. An empty line
// at the first prompt declines.
func (c *chatClient) elicit(in map[string]any) map[string]any {
	decline := map[string]any{"action": "decline"}
	fmt.Fprintf(c.out, "the MCP server %s (tool %s) asks: %s\n", in["server"], in["name"], in["question"])
	yes := func(def bool) bool {
		line, err := c.readLine()
		if errors.Is(err, errInterrupted) {
			c.interrupted()
			return false
		}
		line = strings.ToLower(line)
		if def {
			return !strings.HasPrefix(line, "n")
		}
		return strings.HasPrefix(line, "y")
	}
	if u, ok := in["url"].(string); ok && u != "" {
		fmt.Fprintf(c.out, "  open %s\ndone there? [y/N] ", u)
		if yes(false) {
			return map[string]any{"action": "accept"}
		}
		return decline
	}
	sch, _ := in["schema"].(map[string]any)
	props, _ := sch["properties"].(map[string]any)
	required := map[string]bool{}
	if rs, ok := sch["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprint(c.out, "fill it in? [Y/n] ")
	if !yes(true) || c.quitting {
		return decline
	}
	content := map[string]any{}
	for _, name := range names {
		p, _ := props[name].(map[string]any)
		label := name
		if t, ok := p["title"].(string); ok && t != "" {
			label = t
		}
		hint := formHint(p)
		if required[name] {
			hint += ", required"
		}
		raw, _ := json.Marshal(p)
		field, _ := schema.Compile(raw) // one that does not compile: the server says so
		for {
			fmt.Fprintf(c.out, "  %s (%s)> ", label, hint)
			line, err := c.readLine()
			if errors.Is(err, errInterrupted) {
				c.interrupted()
				return decline
			}
			if err != nil {
				return map[string]any{"action": "accept", "content": content}
			}
			if line == "" {
				if required[name] {
					fmt.Fprintf(c.out, "  %s is required; again (Ctrl-C declines the form):\n", label)
					continue
				}
				break
			}
			v := formValue(p, line)
			if field != nil {
				b, _ := json.Marshal(v)
				if err := field.Validate(b, label); err != nil {
					fmt.Fprintf(c.out, "  %v; again:\n", err)
					continue
				}
			}
			content[name] = v
			break
		}
	}
	return map[string]any{"action": "accept", "content": content}
}

// formHint says what a form field takes.
func formHint(p map[string]any) string {
	if enum, ok := p["enum"].([]any); ok {
		return fmt.Sprintf("one of %v", enum)
	}
	if items, ok := p["items"].(map[string]any); ok {
		if enum, ok := items["enum"].([]any); ok {
			return fmt.Sprintf("some of %v, comma-separated", enum)
		}
	}
	if t, ok := p["type"].(string); ok {
		return t
	}
	return "text"
}

// formValue is a typed line as the field's value: numbers and booleans
// parsed, an array of enums split on commas; a line that does not parse
// stays text (the server's schema check then says what is wrong).
func formValue(p map[string]any, line string) any {
	switch p["type"] {
	case "integer", "number":
		var n json.Number
		if json.Unmarshal([]byte(line), &n) == nil {
			return n
		}
	case "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true
		case "n", "no", "false":
			return false
		}
	case "array":
		var out []string
		for _, s := range strings.Split(line, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return line
}
