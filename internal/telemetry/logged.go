package telemetry

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// loggedPath is a request's path as the access log says it: its route's pattern,
// each parameter written as the id it took when that is a UUID (the API's ids are)
// and as the pattern's {name} otherwise, and a path no route matched as one "*" a
// segment. A path's segments are whatever a caller puts there (a card, a password),
// and a log is no place for them; the pattern and a UUID are not a caller's text.
func loggedPath(route, path string) string {
	if route == "" || route == "unmatched" || !strings.HasPrefix(route, "/") {
		n := strings.Count(strings.Trim(path, "/"), "/") + 1
		if strings.Trim(path, "/") == "" {
			return "/"
		}
		return strings.Repeat("/*", n)
	}
	if !strings.Contains(route, "{") {
		return route
	}
	pattern, segs := strings.Split(route, "/"), strings.Split(path, "/")
	var b strings.Builder
	for i, p := range pattern {
		if i > 0 {
			b.WriteByte('/')
		}
		switch {
		case p == "*":
			b.WriteByte('*')
			return b.String()
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			if i < len(segs) && len(segs) == len(pattern) && uuidShaped(segs[i]) {
				b.WriteString(strings.ToLower(segs[i]))
			} else {
				b.WriteString(p)
			}
		default:
			b.WriteString(p)
		}
	}
	return b.String()
}

func uuidShaped(s string) bool {
	_, ok := callerID(s)
	return ok && len(s) == 36
}

// clients are the user agents the access log names, by the name of their first
// product, as they write it.
var clients = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{"Mozilla", "curl", "Wget", "HTTPie", "python-requests", "python-httpx", "aiohttp", "Python-urllib",
		"Go-http-client", "node", "node-fetch", "undici", "axios", "okhttp", "Java", "Apache-HttpClient", "PostmanRuntime",
		"insomnia", "OpenAI", "Anthropic", "Ruby", "Dart", "reqwest", "Deno", "Bun", "Prometheus", "kube-probe", "ELB-HealthChecker"} {
		m[strings.ToLower(name)] = name
	}
	return m
}()

// loggedUserAgent is a user agent as the access log says it: the name of its first
// product when it is a well-known client ("curl", "Mozilla"), else "other", and ""
// when there is none. Versions, comments and every other product are left out: a
// user agent is whatever a caller writes, and an agent could write a saved value
// into it to have it logged.
func loggedUserAgent(ua string) string {
	if ua == "" {
		return ""
	}
	name := ua
	if i := strings.IndexAny(name, "/ ("); i >= 0 {
		name = name[:i]
	}
	if known, ok := clients[strings.ToLower(name)]; ok {
		return known
	}
	return "other"
}

// LoggedPath is r's path as a log line may say it (see loggedPath): by the pattern
// of the route that matched it, once the router matched one.
func LoggedPath(r *http.Request) string {
	route := ""
	if rc := chi.RouteContext(r.Context()); rc != nil {
		route = rc.RoutePattern()
	}
	if route == "" {
		if req := From(r.Context()); req != nil {
			route = req.Route
		}
	}
	return loggedPath(route, r.URL.Path)
}
