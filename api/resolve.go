package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/search"
)

// Memory-aware resolution: what an agent should call for a task, and which of its
// user's saved values may fill the fields the task needs, as handles only.

type resolveRequest struct {
	Intent    string        `json:"intent"`
	TargetURL string        `json:"targetUrl"`
	Fields    []memory.Want `json:"fields"`
}

func (q *resolveRequest) validate() error {
	if strings.TrimSpace(q.Intent) == "" && q.TargetURL == "" {
		return problem.Invalid("Give intent (what the task is), targetUrl (where it happens), or both.")
	}
	if len(q.Intent) > 1024 {
		return problem.Invalid("intent must be at most 1024 bytes.")
	}
	if q.TargetURL != "" {
		if err := httpURL("targetUrl", q.TargetURL); err != nil {
			return err
		}
	}
	if len(q.Fields) > memory.MaxFields {
		return problem.Invalid("fields lists at most " + strconv.Itoa(memory.MaxFields) + " fields.")
	}
	for i, f := range q.Fields {
		at := "fields[" + strconv.Itoa(i) + "]"
		if f.Key == "" || len(f.Key) > 64 || len(f.Label) > 200 || len(f.Type) > 32 {
			return problem.Invalid(at + " needs a key of at most 64 bytes, a label of at most 200 and a type.")
		}
	}
	return nil
}

// provider is one directory method the task may call.
type provider struct {
	ServiceID string  `json:"serviceId"`
	MethodID  string  `json:"methodId"`
	Name      string  `json:"name"`
	URL       string  `json:"url"`
	Method    string  `json:"method"`
	Price     *string `json:"price"`
	Network   *string `json:"network"`
	Verdict   string  `json:"verdict"`
	Payable   bool    `json:"payable"`
}

type resolveBody struct {
	// Match is how the providers were found: "host" (the target's site), a search
	// match ("slug", "method", "provider", "semantic"), or "none".
	Match      string              `json:"match"`
	Providers  []provider          `json:"providers"`
	Fields     []memory.Candidates `json:"fields"`
	Missing    []string            `json:"missing"`
	NextAction string              `json:"nextAction"`
}

func providerOf(m directory.Method) provider {
	p := provider{ServiceID: m.Hostname, MethodID: m.Slug, Name: m.Name, URL: m.Endpoint.URL, Method: m.Endpoint.Method,
		Verdict: m.Trust.Verdict, Payable: m.Payable}
	if pr := m.Trust.Probe; pr != nil {
		p.Network = pr.Network
		if pr.Price != nil {
			p.Price = pr.Price.Value
			if p.Price == nil {
				p.Price = pr.Price.Amount
			}
		}
	}
	return p
}

// maxProviders bounds the providers a resolution lists.
const maxProviders = 10

// handleResolve matches the directory by the target's site, else searches it for
// the intent through the same search service as the public route (same ranking,
// same limits, charged to the key's user), and matches the wanted fields against
// the session's memory catalog.
func (s *Server) handleResolve() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req resolveRequest
		id, _, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			return err
		}
		out, err := s.resolve(r.Context(), s.searchCaller(r), id, req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

// resolve answers req in session sid (see handleResolve), its search charged to
// caller.
func (s *Server) resolve(ctx context.Context, caller search.Caller, sid string, req resolveRequest) (resolveBody, error) {
	out := resolveBody{Match: search.MatchNone, Providers: []provider{}}
	var scope memory.Scope
	snap := s.dir.Current()
	if req.TargetURL != "" {
		var err error
		if scope.Host, err = memory.HostOf(req.TargetURL); err != nil {
			return resolveBody{}, problem.Invalid("targetUrl's host is not a hostname.")
		}
		for _, pos := range snap.Matching(directory.Filter{Hostname: scope.Host}) {
			if len(out.Providers) == maxProviders {
				break
			}
			out.Providers = append(out.Providers, providerOf(snap.Methods()[pos]))
		}
		if len(out.Providers) > 0 {
			out.Match = "host"
		}
	}
	if len(out.Providers) == 0 && strings.TrimSpace(req.Intent) != "" {
		a, err := s.search.Search(ctx, caller, snap, req.Intent, directory.Filter{})
		if err != nil {
			return resolveBody{}, err
		}
		out.Match = a.Match
		for _, h := range a.Hits {
			out.Providers = append(out.Providers, providerOf(snap.Methods()[h.Pos]))
		}
	}
	if scope.Host == "" {
		scope.AllSites = true // no site named: only what is saved for every site
	}
	entries, _, err := s.svc.Memory.Catalog(ctx, principalOf(ctx), sid, scope)
	if err != nil {
		return resolveBody{}, err
	}
	out.Fields, out.Missing, out.NextAction = memory.Match(entries, req.Fields)
	return out, nil
}
