package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/protect"
)

// sourceValues is the protect.Values of a server wired with a source of protected
// values alone: no value counts as given to an agent.
type sourceValues struct{ Authenticated }

func (v sourceValues) Protected(ctx context.Context, userID string) ([]string, error) {
	return v.Authenticated.Protected.Protected(ctx, userID)
}

func (sourceValues) Given(context.Context, string, string) ([]string, error) { return nil, nil }

// routeOf names the route ctx serves, for a detection's record: the pattern, never
// the path as sent (it may hold the value).
func routeOf(ctx context.Context) string {
	if rc := chi.RouteContext(ctx); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	if tool, ok := ctx.Value(toolKey{}).(string); ok {
		return "mcp:" + tool
	}
	return "unknown"
}

// toolKey carries the MCP tool a call serves, for routeOf.
type toolKey struct{}

// checkProtected is the rule of protect for raw, a JSON body the request would have
// kept or sent on: every string, member name and number of it, in the order written
// and joined, scanned for the user's protected values (protect.Service.Check).
func (s *Server) checkProtected(ctx context.Context, raw []byte) error {
	return s.checkParts(ctx, jsonParts(raw, ""))
}

// checkValues is checkProtected for a body whose members named value are values to
// save (a memory item's fields): those are what it is for, and are not scanned.
func (s *Server) checkValues(ctx context.Context, raw []byte) error {
	return s.checkParts(ctx, jsonParts(raw, "value"))
}

// checkParts is checkProtected for text already taken apart.
func (s *Server) checkParts(ctx context.Context, parts []string) error {
	if !anyText(parts) {
		return nil
	}
	return s.svc.Guard.Check(ctx, principalOf(ctx), routeOf(ctx), parts)
}

// screenRequest scans what an agent's request carries outside its body (the path
// and query as sent) for protected values it was never given, before any handler
// sees it: such a request is refused and counted like a body that holds one. The
// values it loaded go on in the request's context, for the body's check.
func (s *Server) screenRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		parts := []string{r.URL.EscapedPath(), r.URL.RawQuery}
		if p.AgentID == "" || !anyText(parts) {
			next.ServeHTTP(w, r)
			return
		}
		sets, err := s.svc.Guard.Screen(r.Context(), p, routeOf(r.Context()), parts)
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(protect.WithSets(r.Context(), p, sets)))
	})
}

// screenToolCalls applies to an agent's MCP tool calls what screenRequest applies to
// its routes: a call whose name or arguments hold a protected value it was never
// given, or a flood of candidates, is refused and counted before any tool runs, read
// tools included.
func (s *Server) screenToolCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if method != "tools/call" || !ok || principalOf(ctx).AgentID == "" {
			return next(ctx, method, req)
		}
		parts := append([]string{p.Name}, jsonParts(p.Arguments, "")...)
		if !anyText(parts) {
			return next(ctx, method, req)
		}
		if _, err := s.svc.Guard.Screen(ctx, principalOf(ctx), "mcp:tools/call", parts); err != nil {
			pe, ok := problem.As(err)
			if !ok {
				pe = problem.New(problem.RedactionUnavailable, "The user's protected values could not be loaded, so the call was not made.")
			}
			r := &mcp.CallToolResult{}
			r.SetError(toolFailure(pe.Code + ": " + pe.Detail))
			return r, nil
		}
		return next(ctx, method, req)
	}
}

// refuse answers a refusal of the guard: the paused agent's as a revoked key's.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if problem.CodeOf(err) == problem.KeyRevoked {
		w.Header()["Www-Authenticate"] = s.challenge(r, true)
	}
	writeError(w, r, s.log, requestID(r), "", err)
}

// jsonParts is every string, member name and number of raw, one JSON value, in the
// order written, leaving out the values of members named skip (at any depth); a body
// that does not parse is one part, itself.
func jsonParts(raw []byte, skip string) []string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var parts []string
	var value func(keep bool) error
	value = func(keep bool) error {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch x := t.(type) {
		case json.Delim: // an object or an array opens: the decoder checks that each closes
			for d.More() {
				if x == '{' {
					k, err := d.Token()
					if err != nil {
						return err
					}
					name, _ := k.(string)
					if keep {
						parts = append(parts, name)
					}
					if err := value(keep && (skip == "" || name != skip)); err != nil {
						return err
					}
					continue
				}
				if err := value(keep); err != nil {
					return err
				}
			}
			_, err = d.Token()
			return err
		case string:
			if keep {
				parts = append(parts, x)
			}
		case json.Number:
			if keep {
				parts = append(parts, x.String())
			}
		}
		return nil
	}
	if err := value(true); err != nil {
		return []string{string(raw)}
	}
	return parts
}

// anyText tells whether parts hold four letters or digits in a row or anywhere:
// anything shorter matches no protected value, and spares loading them.
func anyText(parts []string) bool {
	n := 0
	for _, s := range parts {
		for _, c := range s {
			if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c > 127 {
				if n++; n >= 4 {
					return true
				}
			}
		}
	}
	return false
}

// guardOf is the guard a to serve with: a's own, or one over its source of
// protected values that records nothing.
func guardOf(a Authenticated) *protect.Service {
	if a.Guard != nil {
		return a.Guard
	}
	return protect.NewService(sourceValues{a}, nil, protect.Config{}, nil)
}
