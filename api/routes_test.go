package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/webhook"
)

// everyRoute is a server with every service that adds routes configured.
func everyRoute() *Server {
	return NewServer(Config{}, nil, nil, nil, WithAuthenticated(Authenticated{Services: app.Services{
		Webhooks: webhook.NewService(nil, webhook.Config{}), Captchas: &captcha.Service{}, Memory: memory.NewService(nil, memory.Config{}),
		Origins: origin.NewService(nil, nil, nil, origin.Config{}), OAuth: oauth.NewService(nil, nil, oauth.Config{})}}))
}

// TestEveryRouteIsInTheOpenAPIDocument walks the router and finds each route, with
// its method, in the document, so that a new route cannot ship undocumented.
func TestEveryRouteIsInTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := struct {
		Paths map[string]map[string]json.RawMessage
	}{openapitest.Paths(t, "openapi.json")}
	s := everyRoute()
	methods := map[string][]string{}
	err := chi.Walk(s.routes(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		methods[route] = append(methods[route], method)
		return nil
	})
	if err != nil || len(methods) < 20 {
		t.Fatalf("walked %d routes: %v", len(methods), err)
	}
	for route, ms := range methods {
		path := strings.TrimPrefix(route, BasePath)
		ops, ok := doc.Paths[path]
		if !ok {
			t.Errorf("%s is not in the OpenAPI document", route)
			continue
		}
		if slices.Contains(ms, http.MethodTrace) {
			// A public route takes every method and answers all but GET, HEAD and
			// OPTIONS with 405 itself: those three are what is documented.
			ms = []string{http.MethodGet, http.MethodHead, http.MethodOptions}
		}
		for _, m := range ms {
			if _, ok := ops[strings.ToLower(m)]; !ok {
				t.Errorf("%s %s: the document has no such operation", m, route)
			}
		}
	}
}

// TestEveryOperationOfTheOpenAPIDocumentIsARoute asks the router for each path and
// method of the document, so that the document describes nothing the API does not
// answer: the human pages, outside the base path, are not in it.
func TestEveryOperationOfTheOpenAPIDocumentIsARoute(t *testing.T) {
	t.Parallel()
	doc := struct {
		Paths map[string]map[string]json.RawMessage
	}{openapitest.Paths(t, "openapi.json")}
	router := everyRoute().routes()
	// rooted tells a path served at the origin's root (its own servers say "/") from
	// one under the base path.
	rooted := func(servers json.RawMessage) bool {
		var s []struct{ URL string }
		json.Unmarshal(servers, &s)
		return len(s) == 1 && s[0].URL == "/"
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for path, item := range doc.Paths {
		for m := range item {
			if m == "parameters" || m == "summary" || m == "description" || m == "servers" {
				continue
			}
			target := BasePath + param.ReplaceAllString(path, "x")
			if rooted(item["servers"]) { // a well-known location, at the origin's root
				target = param.ReplaceAllString(path, "x")
			}
			if !router.Match(chi.NewRouteContext(), strings.ToUpper(m), target) {
				t.Errorf("%s %s: the API has no such route", strings.ToUpper(m), path)
			}
		}
	}
}
