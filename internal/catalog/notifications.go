package catalog

import (
	"context"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hitch-agents/hitch/internal/agent"
	"github.com/hitch-agents/hitch/internal/secret"
	"github.com/hitch-agents/hitch/internal/webhook"
)

// notifications reads spec.notifications: the agent's webhooks
// (docs/architecture.md), each with its URL (https; http only to a loopback host, and only
// where Env.LoopbackWebhooks allows it: `hitch serve`), the events it wants
// and its secret, a reference (env: or ssm:) to a "whsec_" secret, resolved
// now.
func (d *decoder) notifications(n *yaml.Node, at string, a *agent.Agent, env Env) {
	if n.Kind != yaml.SequenceNode {
		d.fail(at, "must be a list, got %s", describe(n))
		return
	}
	for i, e := range n.Content {
		field := index(at, i)
		f := d.fields(e, field, "url", "events", "secret")
		if f == nil {
			continue
		}
		nt := agent.Notification{}
		ok := true
		for _, key := range []string{"url", "events", "secret"} {
			if f[key] == nil {
				d.fail(join(field, key), "required")
				ok = false
			}
		}
		if n := f["url"]; n != nil {
			u, okURL := d.webhookURL(n, join(field, "url"), env)
			nt.URL, ok = u, ok && okURL
		}
		if n := f["events"]; n != nil {
			evs, okEvents := d.stringList(n, join(field, "events"))
			ok = ok && okEvents
			for j, ev := range evs {
				if !slices.Contains(agent.NotificationEvents, ev) {
					d.fail(index(join(field, "events"), j), "unknown event %q: want one of %s", ev, strings.Join(agent.NotificationEvents, ", "))
					ok = false
				}
			}
			if okEvents && len(evs) == 0 {
				d.fail(join(field, "events"), "must name at least one event (%s)", strings.Join(agent.NotificationEvents, ", "))
				ok = false
			}
			nt.Events = evs
		}
		if n := f["secret"]; n != nil {
			key, okSecret := d.webhookSecret(n, join(field, "secret"), env)
			nt.Secret, ok = key, ok && okSecret
		}
		if ok {
			a.Notifications = append(a.Notifications, nt)
		}
	}
}

func (d *decoder) webhookURL(n *yaml.Node, field string, env Env) (string, bool) {
	raw, ok := d.nonEmpty(n, field)
	if !ok {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		d.fail(field, "%q is not an absolute URL without credentials", raw)
		return "", false
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()) && env.LoopbackWebhooks:
	case u.Scheme == "http" && loopback(u.Hostname()):
		d.fail(field, "%q: http is allowed only for a loopback receiver under hitch serve; use https", raw)
		return "", false
	default:
		d.fail(field, "%q: a webhook URL must be https (http only to 127.0.0.1, ::1 or localhost under hitch serve)", raw)
		return "", false
	}
	return raw, true
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (d *decoder) webhookSecret(n *yaml.Node, field string, env Env) ([]byte, bool) {
	ref, ok := d.nonEmpty(n, field)
	if !ok {
		return nil, false
	}
	if err := secret.Check(ref); err != nil {
		d.fail(field, "%v (the secret is a reference, never the secret itself)", err)
		return nil, false
	}
	resolver := env.MCP.Secrets
	if resolver == nil {
		resolver = secret.Resolver{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := resolver.Resolve(ctx, ref)
	if err != nil {
		d.fail(field, "%v", err)
		return nil, false
	}
	key, err := webhook.ParseSecret(strings.TrimSpace(v))
	if err != nil {
		d.fail(field, "%s: %v", ref, err)
		return nil, false
	}
	return key, true
}
