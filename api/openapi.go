package api

import _ "embed"

// openapiJSON is the OpenAPI 3.1.0 document served at /openapi.json and
// /docs/openapi.json. It is validated by the tests in package openapitest.
//
//go:embed openapi.json
var openapiJSON []byte

// Document is the OpenAPI document, for the pages that are rendered from it.
func Document() []byte { return openapiJSON }
