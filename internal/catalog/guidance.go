package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/x402"
)

// discovery is what a listing says about calling a method: the bazaar extension's
// info (x402 v2: extensions.bazaar.info, with its JSON Schema beside it), the same
// info as some facilitators list it (discoveryInfo), or the outputSchema x402 v1 put
// in an accepts entry.
type discovery struct {
	found bool
	v1    bool
	input discoveryInput
	// output is the v2 output: its type ("json", "text"), format and example.
	outputType, outputFormat string
	outputExample            json.RawMessage
	// v1Output is whatever a v1 seller wrote as output: an example or a schema.
	v1Output json.RawMessage
	// The schemas the extension's JSON Schema gives the query parameters, the body
	// and the output example.
	querySchema, bodySchema, outputSchema json.RawMessage
	routeTemplate                         string
}

// discoveryInput is info.input: HTTP (query or body methods) or an MCP tool.
type discoveryInput struct {
	Type, Method, BodyType, Tool, Description, Transport string
	Query, Path, Headers, Body, InputSchema, Example     json.RawMessage
}

// mcp reports whether the input describes an MCP tool.
func (d *discovery) mcp() bool { return strings.EqualFold(d.input.Type, "mcp") }

// readDiscovery finds the discovery info of an item where the listing puts it.
func readDiscovery(it *bazaarItem, first *x402.Requirement) discovery {
	var d discovery
	var info json.RawMessage
	if ext := jsonPath(it.Extensions, "bazaar"); present(jsonPath(ext, "info")) {
		info = jsonPath(ext, "info")
		schema := jsonPath(ext, "schema")
		d.querySchema = jsonPath(schema, "properties", "input", "properties", "queryParams")
		d.bodySchema = jsonPath(schema, "properties", "input", "properties", "body")
		d.outputSchema = jsonPath(schema, "properties", "output", "properties", "example")
		var tmpl x402.String
		if json.Unmarshal(jsonPath(ext, "routeTemplate"), &tmpl) == nil {
			d.routeTemplate = string(tmpl)
		}
	} else if present(it.DiscoveryInfo) {
		info = it.DiscoveryInfo
	} else {
		out := it.OutputSchema
		if !present(out) {
			out = first.OutputSchema
		}
		if !present(jsonPath(out, "input")) {
			return d
		}
		info, d.v1 = out, true
		d.v1Output = jsonPath(out, "output")
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(jsonPath(info, "input"), &in) != nil {
		return d
	}
	d.found = true
	text := func(keys ...string) string {
		for _, k := range keys {
			var s x402.String
			if json.Unmarshal(in[k], &s) == nil && s != "" {
				return string(s)
			}
		}
		return ""
	}
	value := func(keys ...string) json.RawMessage {
		for _, k := range keys {
			if present(in[k]) {
				return in[k]
			}
		}
		return nil
	}
	// x402 v1 sellers spelled the members several ways; v2 uses the first of each.
	d.input = discoveryInput{
		Type:        text("type"),
		Method:      text("method"),
		BodyType:    text("bodyType", "body_type"),
		Tool:        text("toolName", "tool"),
		Description: text("description"),
		Transport:   text("transport"),
		Query:       value("queryParams", "query_params", "query", "params"),
		Path:        value("pathParams"),
		Headers:     value("headers", "headerFields", "header_fields"),
		Body:        value("body", "bodyFields", "body_fields", "bodyParams"),
		InputSchema: value("inputSchema"),
		Example:     value("example"),
	}
	if !d.v1 {
		var out struct {
			Type, Format x402.String
			Example      json.RawMessage
		}
		if json.Unmarshal(jsonPath(info, "output"), &out) == nil {
			d.outputType, d.outputFormat, d.outputExample = string(out.Type), string(out.Format), out.Example
		}
	}
	return d
}

// guidance is the guidance of an imported method, in the shape of the directory's
// contract: summary, request, response, payment, notes.
type guidance struct {
	Summary  string           `json:"summary"`
	Request  guidanceRequest  `json:"request"`
	Response guidanceResponse `json:"response"`
	Payment  string           `json:"payment"`
	Notes    []string         `json:"notes"`
}

type guidanceRequest struct {
	Method      string          `json:"method"`
	URL         string          `json:"url"`
	Tool        string          `json:"tool,omitempty"`
	Path        json.RawMessage `json:"path,omitempty"`
	Query       json.RawMessage `json:"query"`
	QuerySchema json.RawMessage `json:"query_schema,omitempty"`
	Headers     json.RawMessage `json:"headers"`
	BodyType    string          `json:"body_type,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	BodySchema  json.RawMessage `json:"body_schema"`
	Example     string          `json:"example"`
}

type guidanceResponse struct {
	MimeType string          `json:"mime_type"`
	Schema   json.RawMessage `json:"schema"`
	Example  json.RawMessage `json:"example,omitempty"`
}

// Bounds on what guidance keeps of a listing: each example or schema, the curl
// example, and the summary.
const (
	maxGuidancePart    = 32 << 10
	maxGuidanceExample = 4 << 10
	maxSummaryLen      = 500
)

// paymentRoute is how guidance says to pay: through the service when the method is
// payable, else with a wallet of the agent's own after the person's confirmation.
const paymentRoute = "When this method is payable (payable: true), Waystation pays it for you: quote with POST /tools/x402/quote, then ask with POST /sessions/{id}/x402/payments {clientRequestId, maximumDebit, httpRequest}; your person approves the authorize_payment request, the service signs and sends the payment, and you claim the seller's answer with POST /sessions/{id}/requests/{rid}/claim. Otherwise pay the offer with an x402 client and a wallet of your own, after the person approves the spend through a confirm request (POST /sessions/{id}/requests)."

// buildGuidance writes what an agent needs to call an imported method: how to
// call it, from the listing's discovery info when it has some, what comes back, and
// how to pay. Seller-given examples and schemas are kept as JSON when PostgreSQL can
// store them and they are not too large.
func buildGuidance(m *Method, d discovery, mimeType string) json.RawMessage {
	g := guidance{
		Summary: truncateWords(m.Description, maxSummaryLen),
		Request: guidanceRequest{
			Method:     m.Endpoint.Method,
			URL:        m.Endpoint.URL,
			Query:      json.RawMessage("{}"),
			Headers:    json.RawMessage("{}"),
			BodySchema: json.RawMessage("null"),
		},
		Response: guidanceResponse{MimeType: mimeType, Schema: json.RawMessage("null")},
		Payment:  paymentText(m.Offers),
		Notes:    []string{},
	}
	if g.Summary == "" {
		g.Summary = m.Name
	}
	var dropped []string
	keep := func(what string, raw json.RawMessage) json.RawMessage {
		if !present(raw) {
			return nil
		}
		v, ok := storableJSON(raw, maxGuidancePart)
		if !ok {
			dropped = append(dropped, what)
			return nil
		}
		return v
	}
	in := &d.input
	var headers map[string]string
	if !d.v1 {
		// v2 headers are example values; v1 ones describe fields.
		if headers = stringMap(in.Headers); len(headers) > 0 {
			g.Request.Headers, _ = json.Marshal(headers)
		}
	}
	var curlBody, curlType string
	curlHeaders := headers
	switch {
	case m.Tool != "":
		g.Request.Tool = m.Tool
		g.Request.Headers = json.RawMessage(`{"Accept":"application/json, text/event-stream","Content-Type":"application/json"}`)
		args := keep("example", in.Example)
		if args == nil {
			args = json.RawMessage("{}")
		}
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%s,"arguments":%s}}`, jsonString(m.Tool), args)
		g.Request.BodyType = "json"
		g.Request.Body = json.RawMessage(call)
		if schema := keep("input schema", in.InputSchema); schema != nil {
			g.Request.BodySchema = json.RawMessage(fmt.Sprintf(`{"type":"object","required":["jsonrpc","id","method","params"],"properties":{"jsonrpc":{"const":"2.0"},"id":{"type":["integer","string"]},"method":{"const":"tools/call"},"params":{"type":"object","required":["name","arguments"],"properties":{"name":{"const":%s},"arguments":%s}}}}`, jsonString(m.Tool), schema))
		}
		curlBody, curlType = call, "application/json"
		curlHeaders = map[string]string{"Accept": "application/json, text/event-stream"}
		transport := "streamable HTTP"
		if strings.EqualFold(in.Transport, "sse") {
			transport = "the SSE transport"
		}
		g.Notes = append(g.Notes, fmt.Sprintf("An MCP tool: %q on the MCP server at this URL, over %s. Open the MCP session first (initialize), then send tools/call with the tool's name and arguments as in request.body; body_schema describes the whole call, its params.arguments the tool's input.", m.Tool, transport))
	case d.found:
		g.Request.Path = keep("path parameters", in.Path)
		g.Request.Query = orEmpty(keep("query", in.Query))
		if looksLikeSchema(d.querySchema) {
			g.Request.QuerySchema = keep("query schema", d.querySchema)
		}
		if body := keep("body", in.Body); body != nil {
			g.Request.Body = body
			g.Request.BodyType = strings.ToLower(in.BodyType)
			if g.Request.BodyType == "" {
				g.Request.BodyType = "json"
			}
			if !d.v1 {
				curlBody, curlType = bodyForCurl(body, g.Request.BodyType)
			}
		}
		if looksLikeSchema(d.bodySchema) {
			g.Request.BodySchema = orNull(keep("body schema", d.bodySchema))
		}
	}

	if d.found {
		if d.v1 {
			if out := keep("output", d.v1Output); out != nil {
				if looksLikeSchema(out) {
					g.Response.Schema = out
				} else {
					g.Response.Example = out
				}
			}
			g.Notes = append(g.Notes, "Described by the seller's x402 v1 listing: query and body give the fields it takes, in the seller's words, not example values.")
		} else {
			g.Response.Example = keep("output example", d.outputExample)
			if looksLikeSchema(d.outputSchema) {
				g.Response.Schema = orNull(keep("output schema", d.outputSchema))
			}
			g.Notes = append(g.Notes, "The request and response examples are the seller's own, from its x402 Bazaar listing; Waystation has not called the method with them.")
		}
		if g.Response.MimeType == "" {
			g.Response.MimeType = mimeOf(d.outputType, d.outputFormat)
		}
	} else {
		g.Notes = append(g.Notes, "The listing describes neither the input nor the output: read the seller's documentation, or call the URL without paying and read its 402 answer, before paying.")
	}
	if t := templateSegments(m.Endpoint.URL); len(t) > 0 {
		g.Notes = append(g.Notes, fmt.Sprintf("Replace the path placeholders (%s) with real values.", strings.Join(t, ", ")))
	}
	if len(dropped) > 0 {
		g.Notes = append(g.Notes, fmt.Sprintf("The listing's %s could not be kept (larger than %d KiB, or not text PostgreSQL stores).", strings.Join(dropped, ", "), maxGuidancePart>>10))
	}
	g.Request.Example = curlExample(m.Endpoint.Method, exampleURL(m.Endpoint.URL, d), curlHeaders, curlType, curlBody)
	b, err := json.Marshal(g)
	if err != nil {
		return nil
	}
	return b
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return json.RawMessage("{}")
	}
	return raw
}

func orNull(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return json.RawMessage("null")
	}
	return raw
}

// storableJSON compacts a JSON value that PostgreSQL's jsonb can hold (valid UTF-8
// without NUL) and that is at most max bytes.
func storableJSON(raw json.RawMessage, max int) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if !utf8.Valid(raw) || bytes.Contains(raw, []byte(`\u0000`)) {
		return nil, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil || buf.Len() > max {
		return nil, false
	}
	return json.RawMessage(buf.Bytes()), true
}

// looksLikeSchema reports whether a value is a JSON Schema that says more than
// "an object": a type with properties, items or a description, or a $schema.
func looksLikeSchema(raw json.RawMessage) bool {
	var s map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	if present(s["$schema"]) {
		return true
	}
	var typ string
	if json.Unmarshal(s["type"], &typ) != nil {
		var typs []string
		if json.Unmarshal(s["type"], &typs) != nil {
			return false
		}
	}
	return present(s["properties"]) || present(s["items"]) || present(s["description"]) || present(s["enum"]) ||
		typ != "" && typ != "object"
}

// stringMap reads an object of string values (headers); other values are left out.
func stringMap(raw json.RawMessage) map[string]string {
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range in {
		var s string
		if json.Unmarshal(v, &s) == nil && validHeader(k, s) {
			out[k] = s
		}
	}
	return out
}

// validHeader reports whether a header name and value can be sent as they are.
func validHeader(name, value string) bool {
	if name == "" || len(name) > 100 || len(value) > 1000 {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	for _, r := range value {
		if r < ' ' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return utf8.ValidString(value)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mimeOf turns the discovery output's type and format into a media type.
func mimeOf(typ, format string) string {
	if strings.Contains(format, "/") {
		return x402.Clean(format, 200)
	}
	switch strings.ToLower(typ) {
	case "json":
		return "application/json"
	case "text":
		return "text/plain"
	}
	return ""
}

// templateSegments lists the path segments of a URL that are placeholders.
func templateSegments(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg != "" && isTemplateSegment(seg) {
			out = append(out, seg)
		}
	}
	return out
}

// exampleURL is the URL to call in the example: path parameters filled in from the
// listing's example values and, for x402 v2 query methods, the example query.
func exampleURL(raw string, d discovery) string {
	u, err := url.Parse(raw)
	if err != nil || !d.found || d.v1 {
		return raw
	}
	if path := scalarMap(d.input.Path); len(path) > 0 {
		segs := strings.Split(u.Path, "/")
		for i, seg := range segs {
			if name, ok := placeholderName(seg); ok {
				if v, ok := path[name]; ok {
					segs[i] = url.PathEscape(v)
				}
			}
		}
		u.Path, u.RawPath = strings.Join(segs, "/"), ""
	}
	if q := scalarMap(d.input.Query); len(q) > 0 && !strings.EqualFold(d.input.Type, "mcp") {
		vals := u.Query()
		for k, v := range q {
			vals.Set(k, v)
		}
		u.RawQuery = vals.Encode()
	}
	return u.String()
}

// placeholderName reads a path placeholder: ":id", "{id}", "[id]" or "<id>".
func placeholderName(seg string) (string, bool) {
	if len(seg) > 1 && seg[0] == ':' {
		return seg[1:], true
	}
	if len(seg) > 2 {
		switch seg[0] {
		case '{', '[', '<':
			return seg[1 : len(seg)-1], true
		}
	}
	return "", false
}

// scalarMap reads an object whose values are strings, numbers or booleans, as text;
// nil when any value is something else.
func scalarMap(raw json.RawMessage) map[string]string {
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		v = bytes.TrimSpace(v)
		var s string
		switch {
		case json.Unmarshal(v, &s) == nil:
		case bytes.Equal(v, []byte("true")), bytes.Equal(v, []byte("false")):
			s = string(v)
		default:
			var n json.Number
			if json.Unmarshal(v, &n) != nil {
				return nil
			}
			s = n.String()
		}
		out[k] = s
	}
	return out
}

// bodyForCurl is the body an example sends, and its content type.
func bodyForCurl(body json.RawMessage, bodyType string) (string, string) {
	switch bodyType {
	case "text":
		var s string
		if json.Unmarshal(body, &s) == nil {
			return s, "text/plain"
		}
		return string(body), "text/plain"
	case "form-data":
		return "", "multipart/form-data"
	}
	return string(body), "application/json"
}

// curlExample writes the call as a curl command line.
func curlExample(method, target string, headers map[string]string, contentType, body string) string {
	var b strings.Builder
	b.WriteString("curl")
	switch method {
	case "GET":
	case "HEAD":
		b.WriteString(" -I")
	default:
		b.WriteString(" -X " + method)
	}
	b.WriteString(" " + shellQuote(target))
	names := make([]string, 0, len(headers))
	for k := range headers {
		if !strings.EqualFold(k, "content-type") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		b.WriteString(" -H " + shellQuote(k+": "+headers[k]))
	}
	switch {
	case contentType == "multipart/form-data":
		b.WriteString(" -F 'field=value'")
	case body != "" && len(body) <= maxGuidanceExample:
		b.WriteString(" -H " + shellQuote("Content-Type: "+contentType))
		b.WriteString(" --data-raw " + shellQuote(body))
	case body != "":
		b.WriteString(" -H " + shellQuote("Content-Type: "+contentType))
		b.WriteString(" --data-binary @body.json")
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxPaymentOffers is how many offers the payment text names.
const maxPaymentOffers = 3

// paymentText says what the listing asks to be paid and how an agent pays it.
func paymentText(offers []Offer) string {
	var prices []string
	for _, o := range offers {
		if len(prices) == maxPaymentOffers {
			break
		}
		network := x402.NormalizeNetwork(o.Network)
		where := x402.NetworkName(network)
		if where == "" {
			where = x402.Clean(network, 80)
		}
		switch a, known := x402.LookupAsset(network, o.Asset); {
		case o.Amount == nil:
			prices = append(prices, "an unreadable amount on "+where)
		case known:
			v, _ := x402.DecimalValue(*o.Amount, a.Decimals)
			prices = append(prices, fmt.Sprintf("%s %s on %s", v, a.Symbol, where))
		default:
			prices = append(prices, fmt.Sprintf("%s atomic units of asset %s on %s", *o.Amount, x402.Clean(o.Asset, 80), where))
		}
	}
	if len(prices) == 0 {
		return "x402: the listing names no price; the seller's 402 answer gives it. " + paymentRoute
	}
	more := ""
	if len(offers) > len(prices) {
		more = fmt.Sprintf(" (and %d more offers)", len(offers)-len(prices))
	}
	return fmt.Sprintf("x402, %s per call as listed%s; the seller's 402 answer is authoritative. %s", strings.Join(prices, ", or "), more, paymentRoute)
}
