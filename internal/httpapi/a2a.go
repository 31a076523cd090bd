package httpapi

import (
	"net/http"

	"github.com/hitch-agents/hitch/internal/agent"
)

// a2aRPC is POST /a2a/{agent}: 413, then the agent (404), then the JSON-RPC
// call (docs/api.md).
func (s *Server) a2aRPC(w http.ResponseWriter, r *http.Request) {
	if s.A2A == nil {
		writeError(w, r, s.log(), agent.Errorf(agent.CodeRouteNotFound, "A2A is not served here"))
		return
	}
	body, err := readBody(w, r, s.maxBody())
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	ag, ok := s.Engine.Agents.Get(r.PathValue("agent"))
	if !ok {
		writeError(w, r, s.log(), agent.Errorf(agent.CodeAgentNotFound, "no agent is named %q", r.PathValue("agent")))
		return
	}
	s.A2A.ServeRPC(w, r, body, ag, userOf(r))
}

// a2aCard is an Agent Card: /a2a/{agent}/.well-known/agent-card.json, or the
// default agent's at the host's root. No token.
func (s *Server) a2aCard(w http.ResponseWriter, r *http.Request) {
	if s.A2A == nil {
		writeError(w, r, s.log(), agent.Errorf(agent.CodeRouteNotFound, "A2A is not served here"))
		return
	}
	name := r.PathValue("agent")
	if name == "" {
		name = s.A2ADefaultAgent
	}
	if name == "" {
		if l, ok := s.Engine.Agents.(AgentLister); ok {
			if all := l.List(); len(all) == 1 {
				name = all[0].Name
			}
		}
	}
	ag, ok := s.Engine.Agents.Get(name)
	if !ok {
		if name == "" {
			writeError(w, r, s.log(), agent.Errorf(agent.CodeAgentNotFound, "there is no default agent: read /a2a/{agent}/.well-known/agent-card.json"))
			return
		}
		writeError(w, r, s.log(), agent.Errorf(agent.CodeAgentNotFound, "no agent is named %q", name))
		return
	}
	card, err := s.A2A.Card(r, ag)
	if err != nil {
		writeError(w, r, s.log(), err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(card)
}
