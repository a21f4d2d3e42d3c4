package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/a-h/templ"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/resource"
)

// Reference is the API's OpenAPI document read for people and agents: the API
// reference page and /llms.txt are rendered from it, so they never drift from it.
type Reference struct {
	Title, Version, Description string
	// Base is the path every operation hangs off; DocURL the document's own URL.
	Base, DocURL string
	Groups       []RefGroup
}

// RefGroup is the operations of one tag.
type RefGroup struct {
	Tag, Description string
	Ops              []RefOp
}

// RefOp is one operation.
type RefOp struct {
	ID, Method, Path, Summary, Description string
	// Base is the path Path hangs off: the document's, or "" for a path served at
	// the origin's root (its own servers say "/"), as the OAuth metadata is.
	Base string
	// Auth says which key it takes: none, a key, or either.
	Auth      string
	Params    []RefParam
	Body      string
	Responses []RefResponse
}

// RefParam is one parameter.
type RefParam struct {
	Name, In, Description string
	Required              bool
}

// RefResponse is one answer.
type RefResponse struct {
	Code, Description string
}

type openapiDoc struct {
	Info struct {
		Title, Version, Description string
	} `json:"info"`
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
	Tags []struct {
		Name, Description string
	} `json:"tags"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Parameters map[string]openapiParam `json:"parameters"`
		Responses  map[string]struct {
			Description string `json:"description"`
		} `json:"responses"`
	} `json:"components"`
}

type openapiParam struct {
	Ref         string `json:"$ref"`
	Name        string `json:"name"`
	In          string `json:"in"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

type openapiOp struct {
	OperationID string                `json:"operationId"`
	Tags        []string              `json:"tags"`
	Summary     string                `json:"summary"`
	Description string                `json:"description"`
	Security    []map[string][]string `json:"security"`
	Parameters  []openapiParam        `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema struct {
				Ref string `json:"$ref"`
			}
		}
	} `json:"requestBody"`
	Responses map[string]struct {
		Ref         string `json:"$ref"`
		Description string `json:"description"`
	} `json:"responses"`
}

var methodOrder = []string{"get", "post", "put", "patch", "delete", "options"}

// ParseReference reads an OpenAPI 3.1 document. HEAD operations are left out: each
// mirrors a GET.
func ParseReference(doc []byte, docURL string) (*Reference, error) {
	var d openapiDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	ref := &Reference{Title: d.Info.Title, Version: d.Info.Version, Description: d.Info.Description, DocURL: docURL}
	if len(d.Servers) > 0 {
		ref.Base = d.Servers[0].URL
	}
	groups := map[string]*RefGroup{}
	for _, t := range d.Tags {
		ref.Groups = append(ref.Groups, RefGroup{Tag: t.Name, Description: t.Description})
	}
	for i := range ref.Groups {
		groups[ref.Groups[i].Tag] = &ref.Groups[i]
	}
	paths := make([]string, 0, len(d.Paths))
	for p := range d.Paths {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		item := d.Paths[p]
		var shared []openapiParam
		if raw, ok := item["parameters"]; ok {
			json.Unmarshal(raw, &shared)
		}
		base := ref.Base
		var servers []struct{ URL string }
		if raw, ok := item["servers"]; ok && json.Unmarshal(raw, &servers) == nil && len(servers) == 1 && servers[0].URL == "/" {
			base = ""
		}
		for _, m := range methodOrder {
			raw, ok := item[m]
			if !ok {
				continue
			}
			var op openapiOp
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("reference: %s %s: %w", m, p, err)
			}
			ro := RefOp{ID: op.OperationID, Method: strings.ToUpper(m), Path: p, Base: base, Summary: op.Summary, Description: op.Description, Auth: keyOf(op.Security)}
			for _, prm := range append(append([]openapiParam{}, shared...), op.Parameters...) {
				if prm.Ref != "" {
					prm = d.Components.Parameters[strings.TrimPrefix(prm.Ref, "#/components/parameters/")]
				}
				ro.Params = append(ro.Params, RefParam{Name: prm.Name, In: prm.In, Description: prm.Description, Required: prm.Required})
			}
			if op.RequestBody != nil {
				for _, c := range op.RequestBody.Content {
					ro.Body = strings.TrimPrefix(c.Schema.Ref, "#/components/schemas/")
				}
			}
			codes := make([]string, 0, len(op.Responses))
			for c := range op.Responses {
				codes = append(codes, c)
			}
			slices.Sort(codes)
			for _, c := range codes {
				r := op.Responses[c]
				desc := r.Description
				if r.Ref != "" {
					desc = d.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")].Description
				}
				ro.Responses = append(ro.Responses, RefResponse{Code: c, Description: desc})
			}
			tag := "Other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			g, ok := groups[tag]
			if !ok {
				ref.Groups = append(ref.Groups, RefGroup{Tag: tag})
				clear(groups)
				for i := range ref.Groups {
					groups[ref.Groups[i].Tag] = &ref.Groups[i]
				}
				g = groups[tag]
			}
			g.Ops = append(g.Ops, ro)
		}
	}
	ref.Groups = slices.DeleteFunc(ref.Groups, func(g RefGroup) bool { return len(g.Ops) == 0 })
	return ref, nil
}

// keyOf says an operation's security in words.
func keyOf(sec []map[string][]string) string {
	switch {
	case sec == nil:
		return "none"
	case len(sec) == 0:
		return "none"
	}
	optional := slices.ContainsFunc(sec, func(m map[string][]string) bool { return len(m) == 0 })
	if optional {
		return "optional key"
	}
	return "key"
}

// referencePath and llmsPath are where the reference page and /llms.txt answer.
const (
	referencePath = "/docs/api"
	llmsPath      = "/llms.txt"
	// documentPath is where people look for the OpenAPI document beside the reference
	// page; it answers with where the document is.
	documentPath = "/docs/openapi.json"
)

// ReferenceView is the API reference page.
type ReferenceView struct {
	Page
	Ref *Reference
}

// WithReference serves the API reference page and /llms.txt from ref.
func WithReference(ref *Reference) Option {
	return func(s *Server) {
		s.reference = ref
		s.llms = resource.New("text/markdown; charset=utf-8", []byte(ref.LLMs()))
	}
}

func (s *Server) handleReference() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.page(w, r, func(snap *directory.Snapshot) (templ.Component, bool) {
			p := newPage(snap, "API reference", "Every route of the Waystation API, from its OpenAPI document.", s.reference.DocURL)
			return ReferencePage(ReferenceView{Page: p, Ref: s.reference}), true
		})
	}
}

// handleDocument sends a request for the OpenAPI document at the site's root to the
// document itself, under the API's base path.
func (s *Server) handleDocument() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = cachePublic
		http.Redirect(w, r, s.reference.DocURL, http.StatusMovedPermanently)
	}
}

func (s *Server) handleLLMs() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, s.llms, cachePublic, http.StatusOK)
	}
}

// LLMs is /llms.txt: what the service is, where its machine-readable descriptions
// are, how agents connect, and every route in a line, each a Markdown link to its
// place on the reference page.
func (ref *Reference) LLMs() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Waystation\n\n> A directory of pay-per-call (x402) sellers for AI agents, with an advisory trust verdict on each seller, and an API through which agents run workflows for their person: sessions, approval requests, sealed memory, payments the service makes after the person approves, CAPTCHA tasks. Payment and identity values stay behind approvals and never reach a language model: agents hold handles.\n\n")
	fmt.Fprintf(&b, "## Start here\n\n")
	fmt.Fprintf(&b, "- [OpenAPI document](%s): every route, its parameters, answers and errors (OpenAPI 3.1, version %s)\n", ref.DocURL, ref.Version)
	fmt.Fprintf(&b, "- [API reference](%s): the same, as a page\n", referencePath)
	fmt.Fprintf(&b, "- [MCP server](%s/mcp): Streamable HTTP (no key: the directory's tools; `Authorization: Bearer sk_agent_...`: the workflow's tools)\n", ref.Base)
	fmt.Fprintf(&b, "- [The directory as JSON](%s/api/public/v1/services): key-less, cacheable; `?q=` searches\n\n", ref.Base)
	fmt.Fprintf(&b, "## Rules\n\n- Errors are RFC 9457 problem+json with a stable `code`; branch on it. The LLM proxy's routes answer theirs as their clients read them, the code as `error.code`: OpenAI's shape under /llm/v1, Anthropic's on /llm/v1/messages.\n- Search with your own phrasings: send `q` and up to four `rewrite` parameters (the MCP tool `search_sellers`: `rewrites`), each a short phrasing of the same need written from the need alone: the capability in standard terms, a keyword version, the API or product category's name. The search reads each and answers only when they agree: it finds more and matches wrongly less than `q` alone.\n- Trust verdicts are advisory; only the person's approval authorises a payment.\n- Keys: `sk_agent_...` acts as one agent, `sk_user_...` as its person; never send a user key from an agent.\n- Values the person keeps are released only by POST /sessions/{id}/materialize, to the agent's runtime, after an approval; never put them in a prompt.\n\n")
	for _, g := range ref.Groups {
		fmt.Fprintf(&b, "## %s\n\n", g.Tag)
		for _, op := range g.Ops {
			fmt.Fprintf(&b, "- [%s %s%s](%s#%s): %s (key: %s)\n", op.Method, op.Base, op.Path, referencePath, op.ID, op.Summary, op.Auth)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// anchor is a tag as a fragment id.
func anchor(tag string) string {
	return "tag-" + strings.ToLower(strings.ReplaceAll(tag, " ", "-"))
}
