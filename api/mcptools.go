package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/search"
)

// newMCPServer builds the MCP server: the directory's tools, and with workflow the
// agent's tools too.
func (s *Server) newMCPServer(workflow bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "waystation", Title: "Waystation", Version: Version},
		&mcp.ServerOptions{Instructions: mcpInstructions, Logger: quietLog(s.log)})
	srv.AddReceivingMiddleware(quietCalls)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptrTo(false)}
	addTool(srv, &mcp.Tool{Name: "search_sellers", Title: "Search sellers", Annotations: readOnly,
		Description: "Search the directory of pay-per-call sellers by what you need, in plain words. Send rewrites too: up to four short phrasings of the same need (the capability in standard terms, a keyword version, the API or product category's name); the search reads each and answers only when they agree, which finds more and matches wrongly less. Answers at most three methods, best first, each with its slug (ask get_method for how to call and pay it), price, the directory's advisory verdict and whether Waystation can pay it for you. When fewer than three match, nearest lists the methods that come closest, none of them a match (not_a_match says why). Same ranking and limits as the public search route."},
		s.toolSearch)
	addTool(srv, &mcp.Tool{Name: "get_method", Title: "Get a method", Annotations: readOnly,
		Description: "One method of the directory by its slug: how to call it (request, example), what it answers, and how to pay it, with its trust verdict."},
		s.toolMethod)
	addTool(srv, &mcp.Tool{Name: "check_merchant", Title: "Check a merchant", Annotations: readOnly,
		Description: "The directory's trust record for a seller's hostname: the advisory verdict and score, the last probes, settled-payment stats and its methods. Advisory: it never authorises a payment."},
		s.toolMerchant)
	addTool(srv, &mcp.Tool{Name: "list_categories", Title: "List categories", Annotations: readOnly,
		Description: "The directory's categories with how many methods each holds, to narrow a search."},
		s.toolCategories)
	if !workflow {
		srv.AddReceivingMiddleware(keyedToolsNeedAKey)
		return srv
	}
	s.addWorkflowTools(srv)
	return srv
}

// workflowTools are the tools an agent key adds to the directory's.
var workflowTools = []string{"open_session", "complete_session", "append_event", "raise_request", "wait_request",
	"claim_artifact", "resolve_fields", "quote_seller", "pay_seller", "create_captcha_task", "get_captcha_task"}

// keyedToolsNeedAKey answers a call of a workflow tool made without a key with an
// error result that says it takes an agent key, where the SDK would say only that
// the tool is unknown.
func keyedToolsNeedAKey(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && slices.Contains(workflowTools, p.Name) {
				r := &mcp.CallToolResult{}
				r.SetError(toolFailure("unauthenticated: " + p.Name + " is one of the workflow's tools, which take an agent key: connect with Authorization: Bearer sk_agent_..., and tools/list names them."))
				return r, nil
			}
		}
		return next(ctx, method, req)
	}
}

func ptrTo[T any](v T) *T { return &v }

type searchIn struct {
	Query    string   `json:"query" jsonschema:"what you need, in plain words (at most 1024 bytes)"`
	Rewrites []string `json:"rewrites,omitempty" jsonschema:"up to four other short phrasings of the same need, each at most 256 bytes: the capability in standard terms (e.g. ERC-20 token balance of a wallet), a keyword version (USDT balance Ethereum address), and the API or product category's name (token balance API). Write them from the need alone; each new one counts against your search rate"`
	Category string   `json:"category,omitempty" jsonschema:"only methods of this category (see list_categories)"`
}

// methodBrief is a method as a model needs it to choose: small, with the slug to ask
// for more.
type methodBrief struct {
	Slug       string   `json:"slug"`
	Name       string   `json:"name"`
	Provider   string   `json:"provider"`
	Hostname   string   `json:"hostname"`
	Category   string   `json:"category"`
	Kind       string   `json:"kind"`
	Summary    string   `json:"summary"`
	Price      string   `json:"price,omitempty" jsonschema:"the price per call as the last probe saw it, e.g. 0.01 USDC"`
	Verdict    string   `json:"verdict" jsonschema:"proceed, caution, avoid or unknown: advisory"`
	Score      *int     `json:"score,omitempty"`
	Payable    bool     `json:"payable" jsonschema:"Waystation can pay this method for you (pay_seller)"`
	Similarity *float64 `json:"similarity,omitempty"`
	RankScore  *float64 `json:"rank_score,omitempty" jsonschema:"what results are ordered by: the similarity with the weight of your words the method holds, or, with rewrites, the fused score of your phrasings"`
	// Similar names a result's near-duplicates, when it has any.
	Similar *similarOut `json:"similar,omitempty" jsonschema:"other sellers of the same thing (one host's near-identical endpoints, or the same API resold): how many, and the slugs of the first 20, the most trusted first; ask get_method for any"`
	// NotAMatch is set on a search's nearest methods alone.
	NotAMatch *notAMatch `json:"not_a_match,omitempty" jsonschema:"set on nearest methods only: why the method is not a match"`
}

// similarOut counts a result's near-duplicates and names the first of them.
type similarOut struct {
	Count int      `json:"count"`
	Slugs []string `json:"slugs"`
}

// notAMatch says why a method near the query is not a match, with the band's figures.
type notAMatch struct {
	Reason     string  `json:"reason" jsonschema:"below_confidence (nothing answers the query well enough), outside_margin (further below the best match than the margin) or below_floor (under the model's floor)"`
	Confidence float64 `json:"confidence" jsonschema:"how sure the search is that its nearest method answers the query"`
	Least      float64 `json:"least" jsonschema:"the least confidence the model accepts"`
	Margin     float64 `json:"margin" jsonschema:"how far below the best match's similarity a match may fall"`
}

type searchOut struct {
	Query   string        `json:"query"`
	Results []methodBrief `json:"results"`
	Nearest []methodBrief `json:"nearest,omitempty" jsonschema:"when fewer than three methods match: the methods nearest the query, none of them a match"`
	Note    string        `json:"note,omitempty"`
}

// brief makes a listing item (or a method's detail) brief; the summary is cut at 200
// bytes on a word.
func brief(raw []byte) methodBrief {
	var m directory.Method
	json.Unmarshal(raw, &m)
	b := methodBrief{Slug: m.Slug, Name: m.Name, Provider: m.Provider, Hostname: m.Hostname, Category: m.Category, Kind: m.Kind,
		Summary: cutWords(m.Description, 200), Verdict: m.Trust.Verdict, Score: m.Trust.Score, Payable: m.Payable}
	if p := m.Trust.Probe; p != nil && p.Price != nil && p.Price.Value != nil {
		b.Price = *p.Price.Value
		if p.AssetSymbol != nil {
			b.Price += " " + *p.AssetSymbol
		}
	}
	return b
}

func cutWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndex(s[:n], " ")
	if cut < n/2 {
		cut = n
	}
	return strings.TrimSpace(s[:cut]) + "…"
}

// toolSearch searches as the route GET /services?q= does: its arguments checked by
// the route's rules, the same search service, charged to the same caller; each
// method is the route's listing item, with its similarity rounded as the route
// writes it.
func (s *Server) toolSearch(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
	const path = "/api/public/v1/services"
	var f directory.Filter
	if in.Category != "" {
		var prob *problem.Error
		if f.Categories, prob = parseList("category", in.Category, catalog.Categories); prob != nil {
			return nil, searchOut{}, toolError(s.toolProblem(ctx, path, prob))
		}
	}
	q, prob := parseQ(in.Query)
	if prob != nil {
		return nil, searchOut{}, toolError(s.toolProblem(ctx, path, prob))
	}
	if len(in.Rewrites) > search.MaxRewrites {
		return nil, searchOut{}, toolError(s.toolProblem(ctx, path, problem.Param(problem.InvalidParameter, "rewrite",
			"At most "+strconv.Itoa(search.MaxRewrites)+" rewrites go with one query; "+strconv.Itoa(len(in.Rewrites))+" were sent.")))
	}
	rewrites := make([]string, len(in.Rewrites))
	for i, r := range in.Rewrites {
		if rewrites[i], prob = parseRewrite(r); prob != nil {
			return nil, searchOut{}, toolError(s.toolProblem(ctx, path, prob))
		}
	}
	if err := s.screenQuery(ctx, principalOf(ctx), q, rewrites...); err != nil {
		return nil, searchOut{}, toolError(s.toolProblem(ctx, path, err))
	}
	snap := s.dir.Current()
	a, err := s.search.SearchPhrased(ctx, s.mcpSearchCaller(ctx), snap, q, rewrites, f)
	if err != nil {
		return nil, searchOut{}, toolError(s.toolProblem(ctx, path, err))
	}
	out := searchOut{Query: in.Query, Results: make([]methodBrief, 0, len(a.Hits))}
	for _, h := range a.Hits {
		b := brief(snap.Item(h.Pos))
		b.Similarity = ptrTo(rounded(h.Similarity))
		b.RankScore = ptrTo(rounded(h.Score))
		if len(h.Similar) > 0 {
			b.Similar = &similarOut{Count: len(h.Similar)}
			for _, p := range h.Similar[:min(len(h.Similar), search.MaxSimilar)] {
				b.Similar.Slugs = append(b.Similar.Slugs, snap.Methods()[p].Slug)
			}
		}
		out.Results = append(out.Results, b)
	}
	if band := a.Band; band != nil {
		for _, n := range a.Nearest {
			b := brief(snap.Item(n.Pos))
			b.Similarity = ptrTo(rounded(n.Similarity))
			b.NotAMatch = &notAMatch{Reason: n.Reason, Confidence: rounded(band.Confidence), Least: rounded(band.Least), Margin: rounded(band.Margin)}
			out.Nearest = append(out.Nearest, b)
		}
	}
	switch {
	case len(out.Results) == 0 && len(out.Nearest) > 0:
		out.Note = "Nothing in the directory matches; nearest lists the methods that come closest, none of them a match: check one does what you need before you pay it, or try other words, or list_categories."
	case len(out.Results) == 0:
		out.Note = "Nothing in the directory is near enough; try other words, or list_categories."
	}
	return nil, out, nil
}

type slugIn struct {
	Slug string `json:"slug" jsonschema:"the method's slug, as search_sellers answers it"`
}

type methodOut struct {
	methodBrief
	Endpoint directory.Endpoint `json:"endpoint"`
	Guidance map[string]any     `json:"guidance" jsonschema:"how to call and pay: summary, request, response, payment, notes"`
}

func (s *Server) toolMethod(ctx context.Context, _ *mcp.CallToolRequest, in slugIn) (*mcp.CallToolResult, methodOut, error) {
	if in.Slug == "" || strings.ContainsAny(in.Slug, "/?#") {
		return nil, methodOut{}, toolFailure("validation_failed: slug must be a method's slug, as search_sellers answers it.")
	}
	res, err := s.dir.Method(in.Slug)
	if err != nil {
		return nil, methodOut{}, toolError(s.toolProblem(ctx, "/api/public/v1/services/"+url.PathEscape(in.Slug), err))
	}
	var m struct {
		Endpoint directory.Endpoint `json:"endpoint"`
		Guidance map[string]any     `json:"guidance"`
	}
	json.Unmarshal(res.Body, &m)
	return nil, methodOut{methodBrief: brief(res.Body), Endpoint: m.Endpoint, Guidance: m.Guidance}, nil
}

type merchantIn struct {
	Hostname string `json:"hostname" jsonschema:"the seller's hostname, e.g. api.example.com (a URL is read for its host)"`
}

type merchantOut struct {
	Hostname  string           `json:"hostname"`
	Providers []string         `json:"providers"`
	Verdict   string           `json:"verdict"`
	Score     *int             `json:"score,omitempty"`
	Advisory  bool             `json:"advisory"`
	Override  string           `json:"override,omitempty" jsonschema:"an operator's reason, when one set the verdict"`
	LastProbe string           `json:"lastProbe,omitempty"`
	Stats     *directory.Stats `json:"stats,omitempty"`
	Methods   []string         `json:"methods" jsonschema:"the slugs of its methods"`
}

func (s *Server) toolMerchant(ctx context.Context, _ *mcp.CallToolRequest, in merchantIn) (*mcp.CallToolResult, merchantOut, error) {
	host := in.Hostname
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		host = u.Hostname()
	}
	if host == "" || strings.ContainsAny(host, "/?#") {
		return nil, merchantOut{}, toolFailure("validation_failed: hostname must be a seller's hostname, such as api.example.com.")
	}
	res, err := s.dir.Merchant(host)
	if err != nil {
		return nil, merchantOut{}, toolError(s.toolProblem(ctx, "/api/public/v1/merchants/"+url.PathEscape(host), err))
	}
	body, err := res.Bytes()
	if err != nil {
		return nil, merchantOut{}, toolError(s.toolProblem(ctx, "/api/public/v1/merchants/"+url.PathEscape(host), err))
	}
	var m directory.Merchant
	json.Unmarshal(body, &m)
	out := merchantOut{Hostname: m.Hostname, Providers: m.Providers, Verdict: m.Trust.Verdict, Score: m.Trust.Score,
		Advisory: m.Trust.Advisory, Stats: m.Stats, Methods: make([]string, 0, len(m.Methods))}
	if o := m.Trust.Override; o != nil {
		out.Override = o.Verdict + ": " + o.Reason
	}
	if p := m.Trust.Probe; p != nil {
		out.LastProbe = p.Outcome + " at " + p.ProbedAt.UTC().Format(time.RFC3339)
	}
	for _, me := range m.Methods {
		out.Methods = append(out.Methods, me.Slug)
	}
	return nil, out, nil
}

type categoriesOut struct {
	Categories []categoryCount `json:"categories"`
}

type categoryCount struct {
	Category string `json:"category"`
	Methods  int    `json:"methods"`
}

// toolCategories reads the facets of the list a route answers to GET
// /services?limit=1.
func (s *Server) toolCategories(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, categoriesOut, error) {
	res := s.dir.List(s.dir.Current(), directory.Filter{Limit: 1})
	var page struct {
		Facets struct {
			Category []struct {
				Value string `json:"value"`
				Count int    `json:"count"`
			} `json:"category"`
		} `json:"facets"`
	}
	json.Unmarshal(res.Body, &page)
	out := categoriesOut{Categories: []categoryCount{}}
	for _, f := range page.Facets.Category {
		out.Categories = append(out.Categories, categoryCount{f.Value, f.Count})
	}
	return nil, out, nil
}

// invalid is a tool's own refusal of its arguments, as an error result.
func invalid(text string) error { return toolFailure("validation_failed: " + text) }

// The workflow tools: each takes its arguments as its route takes its body
// (toolWrite), calls the same use case under the MCP request's principal, and
// answers the route's JSON.

type openSessionIn struct {
	Description     string `json:"description" jsonschema:"what the workflow is for, shown to the person"`
	Type            string `json:"type,omitempty" jsonschema:"a word for the kind of workflow, e.g. purchase (default task)"`
	MerchantName    string `json:"merchantName,omitempty"`
	TargetURL       string `json:"targetUrl,omitempty"`
	ClientSessionID string `json:"clientSessionId,omitempty" jsonschema:"makes a retry safe: the same id answers the same session (default: a new one)"`
}

type completeIn struct {
	SessionID          string `json:"sessionId"`
	Status             string `json:"status" jsonschema:"completed, failed or abandoned"`
	Summary            string `json:"summary"`
	ClientCompletionID string `json:"clientCompletionId,omitempty"`
}

type eventIn struct {
	SessionID     string         `json:"sessionId"`
	Type          string         `json:"type" jsonschema:"runtime.<something>, e.g. runtime.step"`
	Data          map[string]any `json:"data,omitempty" jsonschema:"value-free data: never a value of the person's"`
	ClientEventID string         `json:"clientEventId,omitempty"`
}

type raiseIn struct {
	SessionID       string           `json:"sessionId"`
	ClientRequestID string           `json:"clientRequestId" jsonschema:"makes a retry safe: the same id answers the same request"`
	Kind            string           `json:"kind" jsonschema:"confirm, choice, provide_missing, ask_before_use or choose_candidate"`
	TTLSeconds      *int64           `json:"ttlSeconds,omitempty" jsonschema:"how long the person has (30 to 86400; default 900)"`
	Context         map[string]any   `json:"context,omitempty" jsonschema:"{url, pageTitle, merchantName, reason}: what you are looking at and why you ask"`
	Fields          []map[string]any `json:"fields,omitempty" jsonschema:"[{key, label, type, handle?}] for provide_missing, ask_before_use and choose_candidate"`
	Options         []map[string]any `json:"options,omitempty" jsonschema:"[{id, label, description?}] for choice and choose_candidate"`
	Params          map[string]any   `json:"params,omitempty" jsonschema:"{summary, amount, currency, recipient} for confirm; {purpose} for the use of values"`
	WaitSeconds     int              `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (at most 600) for the person, with progress notifications"`
}

type waitIn struct {
	SessionID   string `json:"sessionId"`
	RequestID   string `json:"requestId"`
	WaitSeconds int    `json:"waitSeconds,omitempty" jsonschema:"at most 600; default 60"`
}

type claimIn struct {
	SessionID string `json:"sessionId"`
	RequestID string `json:"requestId"`
}

type resolveIn struct {
	SessionID string           `json:"sessionId"`
	Intent    string           `json:"intent,omitempty"`
	TargetURL string           `json:"targetUrl,omitempty"`
	Fields    []map[string]any `json:"fields,omitempty" jsonschema:"[{key, label, type}] the form asks for"`
}

type quoteIn struct {
	URL    string `json:"url" jsonschema:"the seller's paid endpoint"`
	Method string `json:"method,omitempty" jsonschema:"GET (default), POST or HEAD"`
}

type payIn struct {
	SessionID       string     `json:"sessionId"`
	ClientRequestID string     `json:"clientRequestId" jsonschema:"makes a retry safe: the same id answers the same payment"`
	MaximumDebit    string     `json:"maximumDebit" jsonschema:"the most this payment may take, in US dollars, e.g. 0.05"`
	HTTPRequest     envelopeIn `json:"httpRequest" jsonschema:"the exact request to pay for; the seller's answer to it is what you claim"`
	TTLSeconds      *int64     `json:"ttlSeconds,omitempty" jsonschema:"how long the person has to approve (30 to 86400; default 900)"`
	Reason          string     `json:"reason,omitempty" jsonschema:"why, shown to the person"`
	WaitSeconds     int        `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (at most 600) for the person's approval and the payment, with progress notifications"`
}

type envelopeIn struct {
	Method  string            `json:"method,omitempty" jsonschema:"GET (default), POST, PUT, PATCH or DELETE"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

type captchaIn struct {
	SessionID    string `json:"sessionId"`
	ClientTaskID string `json:"clientTaskId"`
	Type         string `json:"type" jsonschema:"image_to_text, recaptcha_v2, hcaptcha or turnstile"`
	PageURL      string `json:"pageUrl"`
	SiteKey      string `json:"siteKey,omitempty"`
	Image        string `json:"image,omitempty" jsonschema:"the CAPTCHA image, base64"`
	Reason       string `json:"reason,omitempty"`
}

// noValues is said in every workflow tool's description.
const noValues = " Answers never hold the person's values: only opaque handles."

func (s *Server) addWorkflowTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "open_session", OutputSchema: outputSchema("Session"), Title: "Open a session",
		Description: "Open a session: one workflow you run for your person, holding its events, requests and payments. Answers its id." + noValues},
		func(ctx context.Context, _ *mcp.CallToolRequest, in openSessionIn) (*mcp.CallToolResult, map[string]any, error) {
			if in.Type == "" {
				in.Type = "task"
			}
			if in.ClientSessionID == "" {
				in.ClientSessionID = "mcp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			}
			const path = "/sessions"
			var req createSessionRequest
			body, err := s.toolWrite(ctx, in, &req)
			if err != nil {
				return toolResult(s.toolProblem(ctx, path, err))
			}
			return toolResult(s.toolOnce(ctx, path, "clientSessionId:"+req.ClientSessionID, body, http.StatusCreated, func() (any, error) {
				return s.auth.Sessions.Open(ctx, principalOf(ctx), req.new())
			}))
		})
	addTool(srv, &mcp.Tool{Name: "complete_session", OutputSchema: outputSchema("Completion"), Title: "Complete a session",
		Description: "Close a session with its outcome; open requests in it are canceled." + noValues},
		func(ctx context.Context, _ *mcp.CallToolRequest, in completeIn) (*mcp.CallToolResult, map[string]any, error) {
			p, err := sessionPath(in.SessionID, "/complete")
			if err != nil {
				return nil, nil, invalid(err.Error())
			}
			if in.ClientCompletionID == "" {
				in.ClientCompletionID = "mcp-complete"
			}
			var req completeSessionRequest
			if _, err := s.toolWrite(ctx, map[string]string{"clientCompletionId": in.ClientCompletionID, "status": in.Status, "summary": in.Summary}, &req); err != nil {
				return toolResult(s.toolProblem(ctx, p, err))
			}
			sess, dup, err := s.auth.Sessions.Complete(ctx, principalOf(ctx), strings.ToLower(in.SessionID), req.completion())
			return toolResult(s.toolAnswer(ctx, p, http.StatusOK, completion{Session: sess, Duplicate: dup}, err))
		})
	addTool(srv, &mcp.Tool{Name: "append_event", OutputSchema: outputSchema("Event"), Title: "Append an event",
		Description: "Record a step of the workflow in the session's log (runtime.* events, value-free)." + noValues},
		func(ctx context.Context, _ *mcp.CallToolRequest, in eventIn) (*mcp.CallToolResult, map[string]any, error) {
			p, err := sessionPath(in.SessionID, "/events")
			if err != nil {
				return nil, nil, invalid(err.Error())
			}
			if in.ClientEventID == "" {
				in.ClientEventID = "mcp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			}
			body := map[string]any{"type": in.Type, "clientEventId": in.ClientEventID}
			if in.Data != nil {
				body["data"] = in.Data
			}
			var req appendEventRequest
			b, err := s.toolWrite(ctx, body, &req)
			if err != nil {
				return toolResult(s.toolProblem(ctx, p, err))
			}
			return toolResult(s.toolOnce(ctx, p, "clientEventId:"+req.ClientEventID, b, http.StatusCreated, func() (any, error) {
				return s.auth.Sessions.AppendRuntime(ctx, principalOf(ctx), strings.ToLower(in.SessionID), req.event())
			}))
		})
	addTool(srv, &mcp.Tool{Name: "raise_request", OutputSchema: outputSchema("Request"), Title: "Ask the person",
		Description: "Raise a request the person answers on its approval page: confirm, choice, provide_missing (values come back as handles), ask_before_use (of saved values, by handle), choose_candidate. With waitSeconds, waits for the answer with progress notifications." + noValues},
		func(ctx context.Context, req *mcp.CallToolRequest, in raiseIn) (*mcp.CallToolResult, map[string]any, error) {
			p, err := sessionPath(in.SessionID, "/requests")
			if err != nil {
				return nil, nil, invalid(err.Error())
			}
			body := map[string]any{"clientRequestId": in.ClientRequestID, "kind": in.Kind}
			for k, v := range map[string]map[string]any{"context": in.Context, "params": in.Params} {
				if v != nil {
					body[k] = v
				}
			}
			for k, v := range map[string][]map[string]any{"fields": in.Fields, "options": in.Options} {
				if v != nil {
					body[k] = v
				}
			}
			if in.TTLSeconds != nil {
				body["ttlSeconds"] = *in.TTLSeconds
			}
			var raise createRequestRequest
			b, err := s.toolWrite(ctx, body, &raise)
			if err != nil {
				return toolResult(s.toolProblem(ctx, p, err))
			}
			a := s.toolOnce(ctx, p, "clientRequestId:"+raise.ClientRequestID, b, http.StatusCreated, func() (any, error) {
				out, err := s.auth.Requests.Raise(ctx, principalOf(ctx), strings.ToLower(in.SessionID), raise.New, s.auth.Sessions.Limits.Events)
				return s.requestBody(out), err
			})
			if a.status >= 300 || in.WaitSeconds <= 0 {
				return toolResult(a)
			}
			var r struct{ ID string }
			json.Unmarshal(a.body, &r) // a replay's too
			return s.waitRequest(ctx, req, in.SessionID, r.ID, in.WaitSeconds)
		})
	addTool(srv, &mcp.Tool{Name: "wait_request", OutputSchema: outputSchema("Request"), Title: "Wait for the person",
		Description: "Wait for a request to leave waiting_user (and, for a payment, to be paid), sending progress notifications meanwhile; answers the request." + noValues},
		func(ctx context.Context, req *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, map[string]any, error) {
			if _, err := sessionPath(in.SessionID); err != nil {
				return nil, nil, invalid(err.Error())
			}
			if !uuidPattern.MatchString(in.RequestID) {
				return nil, nil, invalid("requestId must be a request's id.")
			}
			return s.waitRequest(ctx, req, in.SessionID, in.RequestID, in.WaitSeconds)
		})
	addTool(srv, &mcp.Tool{Name: "claim_artifact", OutputSchema: outputSchema("ClaimedArtifact"), Title: "Claim what a request yielded",
		Description: "Claim a fulfilled request's artifact, once: handles to provided values, a confirmation, the chosen option, or a payment's receipt with the seller's answer." + noValues},
		func(ctx context.Context, _ *mcp.CallToolRequest, in claimIn) (*mcp.CallToolResult, map[string]any, error) {
			if !uuidPattern.MatchString(in.RequestID) {
				return nil, nil, invalid("requestId must be a request's id.")
			}
			p, err := sessionPath(in.SessionID, "/requests/", strings.ToLower(in.RequestID), "/claim")
			if err != nil {
				return nil, nil, invalid(err.Error())
			}
			id := strings.ToLower(in.RequestID)
			art, at, err := s.auth.Requests.Claim(ctx, principalOf(ctx), strings.ToLower(in.SessionID), id)
			return toolResult(s.toolAnswer(ctx, p, http.StatusOK, claimed{RequestID: id, Artifact: art, ClaimedAt: at}, err))
		})
	if s.auth.Memory != nil {
		addTool(srv, &mcp.Tool{Name: "resolve_fields", OutputSchema: outputSchema("Resolution"), Title: "Resolve a form's fields",
			Description: "For a site or an intent, the directory's methods and, per field a form asks for, the person's saved values that could fill it, as handles with whether the person must approve their use, plus what is missing and the next action." + noValues},
			func(ctx context.Context, _ *mcp.CallToolRequest, in resolveIn) (*mcp.CallToolResult, map[string]any, error) {
				p, err := sessionPath(in.SessionID, "/resolve")
				if err != nil {
					return nil, nil, invalid(err.Error())
				}
				body := map[string]any{}
				if in.Intent != "" {
					body["intent"] = in.Intent
				}
				if in.TargetURL != "" {
					body["targetUrl"] = in.TargetURL
				}
				if in.Fields != nil {
					body["fields"] = in.Fields
				}
				var res resolveRequest
				if _, err := s.toolWrite(ctx, body, &res); err != nil {
					return toolResult(s.toolProblem(ctx, p, err))
				}
				out, err := s.resolve(ctx, s.mcpSearchCaller(ctx), strings.ToLower(in.SessionID), res)
				return toolResult(s.toolAnswer(ctx, p, http.StatusOK, out, err))
			})
	}
	addTool(srv, &mcp.Tool{Name: "quote_seller", OutputSchema: outputSchema("Quote"), Title: "Quote a seller", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Description: "Ask a seller's endpoint what it charges, never paying: its x402 offer, what paying it would debit, until when, and the directory's advisory word on the seller."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in quoteIn) (*mcp.CallToolResult, map[string]any, error) {
			const path = "/tools/x402/quote"
			var req quoteRequest
			if _, err := s.toolWrite(ctx, in, &req); err != nil {
				return toolResult(s.toolProblem(ctx, path, err))
			}
			out, err := s.quote(ctx, req)
			return toolResult(s.toolAnswer(ctx, path, http.StatusOK, out, err))
		})
	addTool(srv, &mcp.Tool{Name: "pay_seller", OutputSchema: outputSchema("PaymentCreated", "Request"), Title: "Ask to pay a seller",
		Description: "Ask the service to pay a seller for one exact HTTP request, at most maximumDebit US dollars. The person approves the payment on its page (approvalUrl); the service then pays within the limits the person set and keeps the seller's answer, which claim_artifact gives you. With waitSeconds, waits for all that with progress notifications. You never hold a key or a signature." + noValues},
		func(ctx context.Context, req *mcp.CallToolRequest, in payIn) (*mcp.CallToolResult, map[string]any, error) {
			p, err := sessionPath(in.SessionID, "/x402/payments")
			if err != nil {
				return nil, nil, invalid(err.Error())
			}
			if err := s.auth.Payments.CheckPayer(); err != nil {
				return toolResult(s.toolProblem(ctx, p, err))
			}
			var ask createPaymentRequest
			b, err := s.toolWrite(ctx, payment.Ask{ClientRequestID: in.ClientRequestID, MaximumDebit: in.MaximumDebit, TTLSeconds: in.TTLSeconds,
				Reason: in.Reason, HTTPRequest: payment.Envelope(in.HTTPRequest)}, &ask)
			if err == nil {
				err = s.checkAsk(ctx, ask.Ask)
			}
			if err != nil {
				return toolResult(s.toolProblem(ctx, p, err))
			}
			a := s.toolOnce(ctx, p, "clientRequestId:"+ask.ClientRequestID, b, http.StatusCreated, func() (any, error) {
				return s.askPayment(ctx, strings.ToLower(in.SessionID), ask.Ask)
			})
			if a.status >= 300 || in.WaitSeconds <= 0 {
				return toolResult(a)
			}
			var r struct {
				Request struct{ ID string }
			}
			json.Unmarshal(a.body, &r)
			return s.waitRequest(ctx, req, in.SessionID, r.Request.ID, in.WaitSeconds)
		})
	if s.auth.Captchas != nil {
		addTool(srv, &mcp.Tool{Name: "create_captcha_task", OutputSchema: outputSchema("CaptchaTask"), Title: "Get a CAPTCHA answered",
			Description: "Have a CAPTCHA you met answered, by the solver the server uses or by the person on its page; read the answer with get_captcha_task. The answer authorises nothing else."},
			func(ctx context.Context, _ *mcp.CallToolRequest, in captchaIn) (*mcp.CallToolResult, map[string]any, error) {
				p, err := sessionPath(in.SessionID, "/captcha/tasks")
				if err != nil {
					return nil, nil, invalid(err.Error())
				}
				var task createTaskRequest
				b, err := s.toolWrite(ctx, map[string]string{"clientTaskId": in.ClientTaskID, "type": in.Type,
					"pageUrl": in.PageURL, "siteKey": in.SiteKey, "image": in.Image, "reason": in.Reason}, &task)
				if err != nil {
					return toolResult(s.toolProblem(ctx, p, err))
				}
				return toolResult(s.toolOnce(ctx, p, "clientTaskId:"+task.ClientTaskID, b, http.StatusCreated, func() (any, error) {
					t, err := s.auth.Captchas.Create(ctx, principalOf(ctx), strings.ToLower(in.SessionID), task.New, s.auth.Sessions.Limits.Events)
					return s.taskBody(t), err
				}))
			})
		addTool(srv, &mcp.Tool{Name: "get_captcha_task", OutputSchema: outputSchema("CaptchaTask"), Title: "Read a CAPTCHA task", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			Description: "A CAPTCHA task's status and, once solved, its answer; waits up to 30 s while it is pending."},
			func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
				SessionID string `json:"sessionId"`
				TaskID    string `json:"taskId"`
			}) (*mcp.CallToolResult, map[string]any, error) {
				if !uuidPattern.MatchString(in.TaskID) {
					return nil, nil, invalid("taskId must be a task's id.")
				}
				p, err := sessionPath(in.SessionID, "/captcha/tasks/", strings.ToLower(in.TaskID))
				if err != nil {
					return nil, nil, invalid(err.Error())
				}
				sid := strings.ToLower(in.SessionID)
				body, err := s.await(ctx, sid, min(taskWait, s.auth.MaxWait), s.pollTask(ctx, sid, strings.ToLower(in.TaskID)))
				return toolResult(s.toolAnswer(ctx, p, http.StatusOK, body, err))
			})
	}
}

// waitRequest long-polls a request until it is no longer waiting for its person
// (nor being carried out), or seconds pass, notifying progress every step.
func (s *Server) waitRequest(ctx context.Context, req *mcp.CallToolRequest, sessionID, id string, seconds int) (*mcp.CallToolResult, map[string]any, error) {
	if seconds <= 0 {
		seconds = 60
	}
	seconds = min(seconds, 600)
	p, err := sessionPath(sessionID, "/requests/", strings.ToLower(id))
	if err != nil {
		return nil, nil, invalid(err.Error())
	}
	if !uuidPattern.MatchString(id) {
		return toolResult(s.toolProblem(ctx, p, request.ErrNotFound))
	}
	sid, rid := strings.ToLower(sessionID), strings.ToLower(id)
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	token := req.Params.GetProgressToken()
	for step := 0; ; step++ {
		wait := min(time.Until(deadline), waitStep, s.auth.MaxWait).Truncate(time.Second)
		body, err := s.await(ctx, sid, max(wait, 0), s.pollRequest(ctx, sid, rid))
		a := s.toolAnswer(ctx, p, http.StatusOK, body, err)
		if err != nil {
			return toolResult(a)
		}
		status := body.(requestJSON).Status
		open := status == request.StatusWaitingUser || status == request.StatusApproved || status == request.StatusExecuting
		if !open || time.Now().After(deadline) || ctx.Err() != nil {
			return toolResult(a)
		}
		if token != nil {
			msg := "waiting for the person to decide"
			if status != request.StatusWaitingUser {
				msg = "approved; the service is carrying it out"
			}
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(step + 1), Message: msg})
		}
	}
}
