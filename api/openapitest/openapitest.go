// Package openapitest loads the service's OpenAPI 3.1 document, validates it, and
// checks live HTTP responses against it, for tests in any package:
//
//	doc := openapitest.Load(t, "../api/openapi.json")
//	res := rec.Result()
//	doc.CheckResponse(t, req, res, rec.Body.Bytes())
//
// The document is validated with github.com/pb33f/libopenapi-validator against the
// official OpenAPI 3.1 schema (https://spec.openapis.org/oas/3.1/schema/2022-10-07,
// embedded in github.com/pb33f/libopenapi). That schema deliberately does not look
// inside Schema Objects, so every schema in the document is also compiled and checked
// against the JSON Schema 2020-12 meta-schema with github.com/santhosh-tekuri/jsonschema/v6
// (the JSON Schema library libopenapi-validator itself uses).
//
// Responses are checked by libopenapi-validator (route, status documented, media type
// declared, body valid against the operation's schema, required headers present and
// valid), plus the rules of CONTRACT.md the document cannot express: JSON is served
// with charset=utf-8, HEAD, 204 and 304 carry no body, an undocumented path answers
// 404 not_found and an undocumented method 405 method_not_allowed with an Allow that
// names the methods the document gives the path.
package openapitest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// BasePath is the path every route of the document hangs off (its only server URL).
const BasePath = "/functions/v1/api"

// Doc is a parsed and validated OpenAPI 3.1 document. It is safe for concurrent use.
type Doc struct {
	raw       map[string]any
	model     *v3.Document
	validator validator.Validator
	schemas   map[string]*jsonschema.Schema // every Schema Object, by JSON pointer in the document
	routes    []route

	mu sync.Mutex // libopenapi-validator is not documented as safe for concurrent use
}

// route is one path template of the document, split into segments.
type route struct {
	template string
	segs     []string // "{name}" segments match any one non-empty segment
	item     *v3.PathItem
}

var (
	loadMu sync.Mutex
	loaded = map[string]*Doc{} // by absolute path and content
)

// Load reads the OpenAPI document at path (relative to the test's package directory),
// validates it and returns it; any problem fails the test at once. Documents are
// cached per path and content, so calling Load from every test is cheap.
func Load(t testing.TB, path string) *Doc {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("openapitest: %v", err)
	}
	abs, _ := filepath.Abs(path)
	key := abs + "\x00" + string(data)

	loadMu.Lock()
	defer loadMu.Unlock()
	if d, ok := loaded[key]; ok {
		return d
	}
	d, err := Parse(data)
	if err != nil {
		t.Fatalf("openapitest: %s is not a valid OpenAPI 3.1 document:\n%v", path, err)
	}
	loaded[key] = d
	return d
}

// parseMu serialises Parse: libopenapi keeps package-level caches while it builds a
// model.
var parseMu sync.Mutex

// Parse parses data as an OpenAPI 3.1 document and validates it: against the official
// OpenAPI 3.1 schema, every reference resolvable, every Schema Object valid JSON Schema
// 2020-12, operation ids unique, path parameters declared and every operation with
// responses.
func Parse(data []byte) (*Doc, error) {
	parseMu.Lock()
	defer parseMu.Unlock()

	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if v, _ := raw["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf("openapi is %q, want 3.1.x", v)
	}

	cfg := datamodel.NewDocumentConfiguration() // no remote or file references
	cfg.Logger = slog.New(slog.DiscardHandler)  // problems come back as errors
	doc, err := libopenapi.NewDocumentWithConfiguration(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if ok, verrs := schema_validation.ValidateOpenAPIDocument(doc); !ok {
		return nil, joinValidation("document does not conform to the OpenAPI 3.1 schema", verrs)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("build model: %w", err)
	}
	if m == nil {
		return nil, errors.New("build model: no model")
	}
	schemas, err := compileSchemas(raw)
	if err != nil {
		return nil, err
	}
	if err := checkOperations(&m.Model); err != nil {
		return nil, err
	}

	d := &Doc{
		raw:       raw,
		model:     &m.Model,
		validator: validator.NewValidatorFromV3Model(&m.Model, config.WithFormatAssertions()),
		schemas:   schemas,
	}
	for p, item := range m.Model.Paths.PathItems.FromOldest() {
		d.routes = append(d.routes, route{template: p, segs: strings.Split(strings.Trim(p, "/"), "/"), item: item})
	}
	return d, nil
}

// compileSchemas compiles every Schema Object of the document (components.schemas and
// the schemas inline in parameters, headers and media types) as JSON Schema 2020-12,
// which checks each against the 2020-12 meta-schema and resolves every $ref. The
// compiled schemas are returned by their JSON pointer in the document.
func compileSchemas(raw map[string]any) (map[string]*jsonschema.Schema, error) {
	defs := map[string]any{} // by pointer
	if ss, ok := dig(raw, "components", "schemas").(map[string]any); ok {
		for name, s := range ss {
			defs["/components/schemas/"+escapePointer(name)] = s
		}
	}
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				p := ptr + "/" + escapePointer(k)
				if k == "schema" {
					defs[p] = c
					continue
				}
				walk(p, c)
			}
		case []any:
			for i, c := range v {
				walk(ptr+"/"+strconv.Itoa(i), c)
			}
		}
	}
	walk("/paths", raw["paths"])
	walk("/webhooks", raw["webhooks"])
	if comps, ok := raw["components"].(map[string]any); ok {
		for k, v := range comps {
			if k != "schemas" {
				walk("/components/"+escapePointer(k), v)
			}
		}
	}

	// One 2020-12 schema holding them all under $defs, with the document's
	// references rewritten to point there.
	rewritten := map[string]any{}
	for ptr, s := range defs {
		rewritten[ptr] = rewriteRefs(s)
	}
	root := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$defs":   rewritten,
	}
	const loc = "urn:waystation:openapi"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(loc, root); err != nil {
		return nil, fmt.Errorf("schemas: %w", err)
	}
	// Compiling the root checks every schema against the meta-schema at once.
	if _, err := c.Compile(loc); err != nil {
		return nil, fmt.Errorf("schemas are not valid JSON Schema 2020-12: %w", err)
	}
	// Compiling each one resolves its references.
	ptrs := make([]string, 0, len(defs))
	for ptr := range defs {
		ptrs = append(ptrs, ptr)
	}
	sort.Strings(ptrs)
	out := make(map[string]*jsonschema.Schema, len(defs))
	var errs []error
	for _, ptr := range ptrs {
		s, err := c.Compile(loc + "#/$defs/" + escapePointer(ptr))
		if err != nil {
			errs = append(errs, fmt.Errorf("schema at %s: %v", ptr, err))
			continue
		}
		out[ptr] = s
	}
	return out, errors.Join(errs...)
}

// rewriteRefs copies v, turning "#/components/schemas/X" references into the $defs
// entry of X.
func rewriteRefs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, c := range v {
			if s, ok := c.(string); ok && k == "$ref" && strings.HasPrefix(s, "#/components/schemas/") {
				out[k] = "#/$defs/" + escapePointer(s[1:])
				continue
			}
			out[k] = rewriteRefs(c)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, c := range v {
			out[i] = rewriteRefs(c)
		}
		return out
	}
	return v
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// dig walks raw JSON by member names.
func dig(v any, names ...string) any {
	for _, n := range names {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[n]
	}
	return v
}

// checkOperations checks what the OpenAPI schema cannot: operation ids are unique,
// every template variable of a path is declared as a path parameter, and every
// operation has responses.
func checkOperations(m *v3.Document) error {
	if m.Paths == nil {
		return nil
	}
	var errs []error
	ids := map[string]string{}
	for p, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			where := strings.ToUpper(method) + " " + p
			if op.OperationId != "" {
				if prev, dup := ids[op.OperationId]; dup {
					errs = append(errs, fmt.Errorf("%s: operationId %q already used by %s", where, op.OperationId, prev))
				}
				ids[op.OperationId] = where
			}
			declared := map[string]bool{}
			for _, prm := range slices.Concat(item.Parameters, op.Parameters) {
				if prm != nil && prm.In == "path" {
					declared[prm.Name] = true
				}
			}
			for seg := range strings.SplitSeq(p, "/") {
				if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") && !declared[seg[1:len(seg)-1]] {
					errs = append(errs, fmt.Errorf("%s: path parameter %s is not declared", where, seg))
				}
			}
			if op.Responses == nil || op.Responses.Codes == nil || op.Responses.Codes.Len() == 0 {
				errs = append(errs, fmt.Errorf("%s: no responses", where))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckResponse validates a live response to req against the document: the route and
// method (base path stripped, path templates matched), the status, the content type,
// the required headers and the body. body is the response body as read (gzip is
// undone when Content-Encoding says so); res.Body is not read. Each problem is
// reported with t.Errorf.
//
// A path the document does not describe must answer 404 not_found, and a method it
// does not describe for a path must answer 405 method_not_allowed with Allow, both as
// problem+json (components.responses NotFound and MethodNotAllowed).
func (d *Doc) CheckResponse(t testing.TB, req *http.Request, res *http.Response, body []byte) {
	t.Helper()
	for _, err := range d.ResponseErrors(req, res, body) {
		t.Errorf("openapitest: %s %s -> %d: %v", req.Method, req.URL.RequestURI(), res.StatusCode, err)
	}
}

// otlpExport tells whether req is an OTLP/HTTP export, whose answer's Content-Type is
// the request's own, as OTLP/HTTP requires ("application/json", without a charset).
func otlpExport(req *http.Request) bool {
	return req.Method == http.MethodPost && (strings.HasSuffix(req.URL.Path, "/api/traces") || strings.HasSuffix(req.URL.Path, "/api/v1/traces"))
}

// ResponseErrors is CheckResponse returning the problems instead of reporting them.
func (d *Doc) ResponseErrors(req *http.Request, res *http.Response, body []byte) []error {
	var errs []error
	addf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	body, err := decodeBody(res.Header, body)
	if err != nil {
		return []error{err}
	}

	// HTTP and contract rules the document cannot express.
	if req.Method == http.MethodHead || res.StatusCode == http.StatusNoContent || res.StatusCode == http.StatusNotModified {
		if len(body) > 0 {
			addf("a %d response to %s has a body of %d bytes", res.StatusCode, req.Method, len(body))
		}
	}
	if len(body) > 0 {
		ct := res.Header.Get("Content-Type")
		mt, params, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			addf("Content-Type %q: %v", ct, err)
		case mt == "application/json" && !strings.EqualFold(params["charset"], "utf-8") && !otlpExport(req):
			addf("Content-Type %q: JSON is served as application/json; charset=utf-8", ct)
		}
	}

	path := req.URL.EscapedPath()
	rel, ok := strings.CutPrefix(path, BasePath)
	if !ok || (rel != "" && rel[0] != '/') {
		return append(errs, fmt.Errorf("path %s is not under the base path %s", path, BasePath))
	}
	rt := d.match(rel)
	method := strings.ToLower(req.Method)
	switch {
	case rt == nil:
		errs = append(errs, d.checkFallback(req, res, body, "NotFound", http.StatusNotFound)...)
	case rt.item.GetOperations().GetOrZero(method) == nil:
		errs = append(errs, d.checkFallback(req, res, body, "MethodNotAllowed", http.StatusMethodNotAllowed)...)
		if res.StatusCode == http.StatusMethodNotAllowed {
			errs = append(errs, checkAllow(rt, res.Header.Get("Allow"))...)
		}
	default:
		op := rt.item.GetOperations().GetOrZero(method)
		r2 := req.Clone(req.Context())
		r2.URL = &url.URL{Path: BasePath + rel, RawQuery: req.URL.RawQuery}
		res2 := *res
		res2.Body = bodyReader(body)
		res2.Header = quoteStringHeaders(op, res.StatusCode, res.Header)
		d.mu.Lock()
		ok, verrs := d.validator.ValidateHttpResponse(r2, &res2)
		d.mu.Unlock()
		if !ok {
			for _, ve := range verrs {
				errs = append(errs, validationError(ve))
			}
		}
		// libopenapi-validator skips a body that is JSON null; check it here.
		if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
			if ptr := d.mediaSchemaPointer(rt.template, method, res); ptr != "" {
				errs = append(errs, d.validate(ptr, nil)...)
			}
		}
	}
	return errs
}

// mediaSchemaPointer finds the JSON pointer of the schema the document gives for the
// response's status and media type, following a $ref to components.responses.
func (d *Doc) mediaSchemaPointer(template, method string, res *http.Response) string {
	base := "/paths/" + escapePointer(template) + "/" + method + "/responses/"
	responses, _ := dig(d.raw, "paths", template, method, "responses").(map[string]any)
	code := strconv.Itoa(res.StatusCode)
	for _, c := range []string{code, code[:1] + "XX", "default"} {
		r, ok := responses[c].(map[string]any)
		if !ok {
			continue
		}
		ptr := base + c
		if ref, ok := r["$ref"].(string); ok {
			name, ok := strings.CutPrefix(ref, "#/components/responses/")
			if !ok {
				return ""
			}
			r, _ = dig(d.raw, "components", "responses", name).(map[string]any)
			ptr = "/components/responses/" + escapePointer(name)
		}
		mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
		if dig(r, "content", mt, "schema") == nil {
			return ""
		}
		return ptr + "/content/" + escapePointer(mt) + "/schema"
	}
	return ""
}

// quoteStringHeaders returns h with the values of the string-typed headers declared
// for the response JSON-quoted. libopenapi-validator decodes a header value as JSON
// when it can before validating it, which turns a strong ETag ("abc") into abc;
// quoting first makes it validate the value as sent.
func quoteStringHeaders(op *v3.Operation, status int, h http.Header) http.Header {
	if op == nil || op.Responses == nil {
		return h
	}
	code := strconv.Itoa(status)
	resp := op.Responses.Codes.GetOrZero(code)
	if resp == nil {
		resp = op.Responses.Codes.GetOrZero(code[:1] + "XX")
	}
	if resp == nil {
		resp = op.Responses.Default
	}
	if resp == nil || resp.Headers == nil {
		return h
	}
	h = h.Clone()
	for name, hdr := range resp.Headers.FromOldest() {
		if hdr == nil || hdr.Schema == nil {
			continue
		}
		if s := hdr.Schema.Schema(); s == nil || !slices.Contains(s.Type, "string") {
			continue
		}
		vs := h.Values(name)
		if len(vs) == 0 {
			continue
		}
		quoted := make([]string, len(vs))
		for i, v := range vs {
			b, _ := json.Marshal(v)
			quoted[i] = string(b)
		}
		h[http.CanonicalHeaderKey(name)] = quoted
	}
	return h
}

// checkFallback checks a response to a path or method the document does not
// describe against one of components.responses.
func (d *Doc) checkFallback(req *http.Request, res *http.Response, body []byte, name string, status int) []error {
	var errs []error
	addf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if res.StatusCode != status {
		addf("%s %s is not in the document: want %d (components.responses.%s), got %d",
			req.Method, req.URL.Path, status, name, res.StatusCode)
		return errs
	}
	resp, ok := dig(d.raw, "components", "responses", name).(map[string]any)
	if !ok {
		addf("the document has no components.responses.%s", name)
		return errs
	}
	ptr := "/components/responses/" + escapePointer(name)

	// A path the document does not describe may lie outside the directory, whose
	// headers it need not carry; a refused method is on a public route.
	checkRequired := status == http.StatusMethodNotAllowed
	headers, _ := resp["headers"].(map[string]any)
	names := make([]string, 0, len(headers))
	for h := range headers {
		names = append(names, h)
	}
	sort.Strings(names)
	for _, h := range names {
		hdr, _ := headers[h].(map[string]any)
		hptr := ptr + "/headers/" + escapePointer(h) + "/schema"
		if ref, ok := hdr["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/components/headers/")
			hdr, _ = dig(d.raw, "components", "headers", name).(map[string]any)
			hptr = "/components/headers/" + escapePointer(name) + "/schema"
		}
		v := res.Header.Get(h)
		if v == "" {
			if checkRequired && hdr["required"] == true {
				addf("required header %s is missing", h)
			}
			continue
		}
		if s := d.schemas[hptr]; s != nil {
			var val any = v
			if types := headerTypes(hdr["schema"]); !slices.Contains(types, "string") {
				var n json.Number
				if json.Unmarshal([]byte(v), &n) == nil {
					val = n
				}
			}
			for _, err := range d.validate(hptr, val) {
				errs = append(errs, fmt.Errorf("header %s: %w", h, err))
			}
		}
	}
	if req.Method == http.MethodHead {
		return errs
	}
	content, _ := resp["content"].(map[string]any)
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if _, ok := content[mt]; !ok {
		addf("Content-Type %q is not one of components.responses.%s", res.Header.Get("Content-Type"), name)
		return errs
	}
	return append(errs, d.validateJSON(ptr+"/content/"+escapePointer(mt)+"/schema", body)...)
}

func headerTypes(schema any) []string {
	switch t := dig(schema, "type").(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, s := range t {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// validateJSON validates a JSON text against the schema at ptr.
func (d *Doc) validateJSON(ptr string, body []byte) []error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return []error{fmt.Errorf("body is not JSON: %w", err)}
	}
	return d.validate(ptr, v)
}

// validate validates a decoded JSON value against the schema at ptr.
func (d *Doc) validate(ptr string, v any) []error {
	s := d.schemas[ptr]
	if s == nil {
		return []error{fmt.Errorf("the document has no schema at %s", ptr)}
	}
	if err := s.Validate(v); err != nil {
		return []error{fmt.Errorf("schema %s: %w", ptr, err)}
	}
	return nil
}

// ValidateSchema validates a JSON text against components.schemas[name].
func (d *Doc) ValidateSchema(name string, body []byte) error {
	return errors.Join(d.validateJSON("/components/schemas/"+escapePointer(name), body)...)
}

// SchemaNames lists components.schemas in document order.
func (d *Doc) SchemaNames() []string {
	var names []string
	if d.model.Components != nil && d.model.Components.Schemas != nil {
		for name := range d.model.Components.Schemas.KeysFromOldest() {
			names = append(names, name)
		}
	}
	return names
}

// Model is the parsed document, for tests that look at it directly.
func (d *Doc) Model() *v3.Document { return d.model }

// match finds the path template for rel (a path below BasePath); a literal segment
// beats a template variable.
func (d *Doc) match(rel string) *route {
	if rel == "" || (len(rel) > 1 && strings.HasSuffix(rel, "/")) {
		return nil // no route of the document but the root ends in a slash
	}
	segs := strings.Split(strings.Trim(rel, "/"), "/")
	var best *route
	bestLiterals := -1
	for i := range d.routes {
		r := &d.routes[i]
		if len(r.segs) != len(segs) {
			continue
		}
		literals, ok := 0, true
		for j, s := range r.segs {
			if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
				if segs[j] == "" {
					ok = false
					break
				}
				continue
			}
			if s != segs[j] {
				ok = false
				break
			}
			literals++
		}
		if ok && literals > bestLiterals {
			best, bestLiterals = r, literals
		}
	}
	return best
}

// checkAllow checks that the Allow of a 405 names exactly the methods the document
// gives the path, in any order.
func checkAllow(rt *route, allow string) []error {
	var want, got []string
	for m := range rt.item.GetOperations().KeysFromOldest() {
		want = append(want, strings.ToUpper(m))
	}
	for m := range strings.SplitSeq(allow, ",") {
		if m = strings.TrimSpace(m); m != "" {
			got = append(got, m)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return []error{fmt.Errorf("header Allow %q: the document gives %s the methods %s", allow, rt.template, strings.Join(want, ", "))}
	}
	return nil
}

// decodeBody undoes a gzip or brotli Content-Encoding.
func decodeBody(h http.Header, body []byte) ([]byte, error) {
	switch enc := strings.ToLower(strings.TrimSpace(h.Get("Content-Encoding"))); enc {
	case "", "identity":
		return body, nil
	case "gzip":
		if len(body) == 0 {
			return body, nil
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding gzip: %w", err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding gzip: %w", err)
		}
		return out, nil
	case "br":
		out, err := io.ReadAll(brotli.NewReader(bytes.NewReader(body)))
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding br: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unexpected Content-Encoding %q", enc)
	}
}

func bodyReader(body []byte) io.ReadCloser {
	if len(body) == 0 {
		return http.NoBody
	}
	return io.NopCloser(bytes.NewReader(body))
}

// validationError renders a libopenapi-validator error with its schema failures.
func validationError(ve *liberrors.ValidationError) error {
	var b strings.Builder
	b.WriteString(ve.Message)
	if ve.Reason != "" && ve.Reason != ve.Message {
		b.WriteString(": ")
		b.WriteString(ve.Reason)
	}
	for _, f := range ve.SchemaValidationErrors {
		b.WriteString("\n\t")
		if f.FieldPath != "" {
			b.WriteString(f.FieldPath)
			b.WriteString(": ")
		} else if len(f.InstancePath) > 0 {
			b.WriteString("/" + strings.Join(f.InstancePath, "/"))
			b.WriteString(": ")
		}
		b.WriteString(f.Reason)
		if f.KeywordLocation != "" {
			b.WriteString(" (" + f.KeywordLocation + ")")
		}
	}
	return errors.New(b.String())
}

func joinValidation(what string, verrs []*liberrors.ValidationError) error {
	errs := []error{errors.New(what)}
	for _, ve := range verrs {
		errs = append(errs, validationError(ve))
	}
	return errors.Join(errs...)
}
