package api

import (
	"encoding/json"
	"reflect"

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
	if types, ok := s["type"].([]any); ok && len(types) > 1 {
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
	for k, v := range s {
		switch k {
		case "properties", "$defs", "patternProperties", "dependentSchemas":
			if m, ok := v.(map[string]any); ok {
				for name, sub := range m {
					if sm, ok := sub.(map[string]any); ok {
						m[name] = portable(sm)
					}
				}
			}
		case "items", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedItems":
			if sm, ok := v.(map[string]any); ok {
				s[k] = portable(sm)
			}
		case "additionalProperties", "unevaluatedProperties":
			if sm, ok := v.(map[string]any); ok {
				if len(sm) == 0 {
					s[k] = true
				} else {
					s[k] = portable(sm)
				}
			}
		case "anyOf", "oneOf", "allOf", "prefixItems":
			if list, ok := v.([]any); ok {
				for i, sub := range list {
					if sm, ok := sub.(map[string]any); ok {
						list[i] = portable(sm)
					}
				}
			}
		}
	}
	return s
}
