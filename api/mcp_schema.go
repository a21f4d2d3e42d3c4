package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool adds a tool whose input and output schemas are spelled the portable way
// (see portable): from its Go types, or from the schema it was given.
func addTool[In, Out any](srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	if t.InputSchema == nil {
		t.InputSchema = schemaFor[In]()
	}
	switch o := t.OutputSchema.(type) {
	case nil:
		if reflect.TypeFor[Out]().Kind() != reflect.Interface {
			t.OutputSchema = schemaFor[Out]()
		}
	case map[string]any:
		t.OutputSchema = portable(o)
	}
	mcp.AddTool(srv, t, h)
}

// schemaFor is the JSON Schema of T as the MCP SDK infers it, made portable.
func schemaFor[T any]() map[string]any {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // a tool's own types: a programming error, found by every test
	}
	b, _ := json.Marshal(s)
	var m map[string]any
	json.Unmarshal(b, &m)
	return portable(m)
}

// Keywords that constrain one type only, which go into that type's branch when a
// union of types is split.
var typeKeywords = map[string][]string{
	"object":  {"properties", "required", "additionalProperties", "patternProperties", "propertyNames", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "unevaluatedProperties"},
	"array":   {"items", "prefixItems", "contains", "minItems", "maxItems", "uniqueItems", "minContains", "maxContains", "unevaluatedItems"},
	"string":  {"minLength", "maxLength", "pattern", "format", "contentMediaType", "contentEncoding"},
	"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}

// portable rewrites a tool schema, in place, the way hosts of every kind read it: a
// union of types (["string", "null"], as Go's pointers and OpenAPI 3.1's nullables
// write it) becomes anyOf branches of one type each, the constraints of each type in
// its branch; and a free-form map's values, written {}, are written true. Some hosts
// read a schema's type as one string and refuse a tool whose type is an array.
func portable(s map[string]any) map[string]any {
	splitTypes(s)
	for k, v := range s {
		switch k {
		case "properties", "$defs", "patternProperties", "dependentSchemas":
			if m, ok := v.(map[string]any); ok {
				portableEach(m)
			}
		case "items", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedItems":
			if sm, ok := v.(map[string]any); ok {
				s[k] = portable(sm)
			}
		case "additionalProperties", "unevaluatedProperties":
			if sm, ok := v.(map[string]any); ok {
				s[k] = portableValues(sm)
			}
		case "anyOf", "oneOf", "allOf", "prefixItems":
			if list, ok := v.([]any); ok {
				portableList(list)
			}
		}
	}
	return s
}

// splitTypes makes a union of types, in place, anyOf branches of one type each,
// the constraints of each type in its branch.
func splitTypes(s map[string]any) {
	types, ok := s["type"].([]any)
	if !ok || len(types) <= 1 {
		return
	}
	var branches []any
	for _, t := range types {
		b := map[string]any{"type": t}
		name, _ := t.(string)
		for _, k := range typeKeywords[name] {
			if v, ok := s[k]; ok {
				b[k] = v
			}
		}
		branches = append(branches, b)
	}
	for _, t := range types {
		name, _ := t.(string)
		for _, k := range typeKeywords[name] {
			delete(s, k)
		}
	}
	delete(s, "type")
	s["anyOf"] = branches
}

// portableEach makes portable, in place, each schema of a map of them, by name.
func portableEach(m map[string]any) {
	for name, sub := range m {
		if sm, ok := sub.(map[string]any); ok {
			m[name] = portable(sm)
		}
	}
}

// portableList makes portable, in place, each schema of a list of them.
func portableList(list []any) {
	for i, sub := range list {
		if sm, ok := sub.(map[string]any); ok {
			list[i] = portable(sm)
		}
	}
}

// portableValues is the schema of a map's values made portable: a free-form
// value's, {}, written true.
func portableValues(s map[string]any) any {
	if len(s) == 0 {
		return true
	}
	return portable(s)
}

// outputSchema is the JSON Schema of a component of the OpenAPI document, as a tool's
// output schema: the component and the components it refers to, under $defs. The
// SDK checks every structured result against it, so a tool answers what the
// document says the route answers.
func outputSchema(names ...string) map[string]any {
	schemas := componentSchemas()
	defs := map[string]any{}
	var add func(name string)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "$ref" {
					name := strings.TrimPrefix(s, "#/components/schemas/")
					v[k] = "#/$defs/" + name
					add(name)
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	add = func(name string) {
		if _, ok := defs[name]; ok {
			return
		}
		// A deep copy, so that rewriting its references leaves the parsed document alone.
		b, _ := json.Marshal(schemas[name])
		var c any
		json.Unmarshal(b, &c)
		defs[name] = c
		walk(c)
	}
	out := map[string]any{"type": "object", "$defs": defs}
	var refs []any
	for _, n := range names {
		add(n)
		refs = append(refs, map[string]any{"$ref": "#/$defs/" + n})
	}
	if len(refs) == 1 {
		out["$ref"] = refs[0].(map[string]any)["$ref"]
	} else {
		out["oneOf"] = refs
	}
	return out
}

// componentSchemas are the OpenAPI document's component schemas, parsed once for
// every tool of every server.
var componentSchemas = sync.OnceValue(func() map[string]any {
	var d struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiJSON, &d); err != nil {
		panic(err) // the embedded document is checked by the tests
	}
	return d.Components.Schemas
})
