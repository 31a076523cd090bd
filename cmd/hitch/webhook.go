package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hitch-agents/hitch/internal/secret"
	"github.com/hitch-agents/hitch/internal/webhook"
)

const webhookUsage = `Usage:
  hitch webhook verify --secret S --id ID --timestamp TS --signature SIG < body
        check a received webhook's signature (exit 0: valid)
  hitch webhook listen [--addr 127.0.0.1:9000] [--url API] --secret S
        receive webhooks: verify each and print it (resume URLs on --url,
        default $HITCH_URL, else http://127.0.0.1:8080)
S is the secret itself (whsec_…) or a reference to it (env:NAME).
`

// webhookCmd runs `hitch webhook verify|listen`.
func webhookCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, ready chan<- string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, webhookUsage)
		return errors.New("webhook: verify or listen?")
	}
	switch args[0] {
	case "verify":
		return webhookVerify(ctx, args[1:], stdin, stdout, stderr)
	case "listen":
		return webhookListen(ctx, args[1:], stdout, stderr, ready)
	}
	fmt.Fprint(stderr, webhookUsage)
	return fmt.Errorf("webhook: unknown command %q", args[0])
}

// webhookKey reads --secret: a whsec_ secret or a reference to one.
func webhookKey(ctx context.Context, s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("webhook: --secret is required")
	}
	if !strings.HasPrefix(s, webhook.SecretPrefix) {
		v, err := secret.Resolver{}.Resolve(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("webhook: --secret: %w", err)
		}
		s = strings.TrimSpace(v)
	}
	return webhook.ParseSecret(s)
}

func webhookVerify(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hitch webhook verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sec := fs.String("secret", "", "the webhook's secret (whsec_…) or env:NAME")
	id := fs.String("id", "", "the webhook-id header")
	ts := fs.String("timestamp", "", "the webhook-timestamp header")
	sig := fs.String("signature", "", "the webhook-signature header")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key, err := webhookKey(ctx, *sec)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("webhook: read the body: %w", err)
	}
	h := http.Header{}
	h.Set(webhook.HeaderID, *id)
	h.Set(webhook.HeaderTimestamp, *ts)
	h.Set(webhook.HeaderSignature, *sig)
	if err := webhook.Verify(key, h, body, time.Now()); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "valid")
	return nil
}

func webhookListen(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("hitch webhook listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9000", "address to listen on")
	sec := fs.String("secret", "", "the webhook's secret (whsec_…) or env:NAME")
	base := fs.String("url", envOr("HITCH_URL", defaultURL), "the API's base URL, before each resume path printed (default: $HITCH_URL, else "+defaultURL+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("webhook: unexpected arguments %q", fs.Args())
	}
	apiBase := strings.TrimRight(*base, "/")
	key, err := webhookKey(ctx, *sec)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("webhook: listen on %s: %w", *addr, err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err == nil {
			err = webhook.Verify(key, r.Header, body, time.Now())
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			fmt.Fprintf(stdout, "refused %s: %v\n", r.Header.Get(webhook.HeaderID), err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		id := r.Header.Get(webhook.HeaderID)
		var p struct {
			Type string `json:"type"`
			Data struct {
				Agent     string `json:"agent"`
				TaskID    string `json:"task_id"`
				RequestID string `json:"request_id"`
				Status    string `json:"status"`
				ResumeURL string `json:"resume_url"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &p)
		dup := ""
		if seen[id] {
			dup = " (a retry of a delivery already received)"
		}
		seen[id] = true
		fmt.Fprintf(stdout, "%s %s agent=%s task=%s request=%s status=%s%s\n", p.Type, id, p.Data.Agent, p.Data.TaskID, p.Data.RequestID, p.Data.Status, dup)
		if p.Data.ResumeURL != "" && p.Type == "request.paused" {
			resume := p.Data.ResumeURL
			if strings.HasPrefix(resume, "/") {
				resume = apiBase + resume // a path of the API (docs/api.md): shown whole, ready for curl
			}
			fmt.Fprintf(stdout, "  resume: POST %s\n", resume)
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	fmt.Fprintf(stdout, "hitch: receiving webhooks on http://%s\n", ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("webhook: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
