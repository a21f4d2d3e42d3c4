package api

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/problem"
)

// Where the authorization server answers: its endpoints under the API's base path,
// its metadata (RFC 8414) and each resource's (RFC 9728) at the origin's well-known
// locations, the resource's path appended.
const (
	OAuthRegisterPath     = "/oauth/register"
	OAuthAuthorizePath    = "/oauth/authorize"
	OAuthTokenPath        = "/oauth/token"
	OAuthRevokePath       = "/oauth/revoke"
	ProtectedResourcePath = "/.well-known/oauth-protected-resource"
	AuthServerPath        = "/.well-known/oauth-authorization-server"
	// ConsentPath is the console's page where the person answers an authorization
	// request, its id appended.
	ConsentPath = "/app/oauth/"
)

// maxOAuthBody bounds the body of a registration, token or revocation request.
const maxOAuthBody = 64 << 10

// origin is the service's public origin: PublicURL, else the scheme and host r came
// to (a deployment behind a proxy sets PUBLIC_URL).
func (s *Server) origin(r *http.Request) string {
	if s.svc.PublicURL != "" {
		return strings.TrimSuffix(s.svc.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// resources are the protected resources tokens are bound to: the MCP server first
// (the default of a request that names none), then the API.
func (s *Server) resources(r *http.Request) []string {
	o := s.origin(r) + BasePath
	return []string{o + MCPPath, o}
}

// resourceOf is the resource r calls: the MCP server, or the API.
func (s *Server) resourceOf(r *http.Request) string {
	rs := s.resources(r)
	if r.URL.Path == BasePath+MCPPath {
		return rs[0]
	}
	return rs[1]
}

// challenge is the WWW-Authenticate of a 401 of r: on the MCP server it names the
// resource's metadata and the scope a host asks for, so that an OAuth host finds
// where to sign in (RFC 9728, section 5.1).
func (s *Server) challenge(r *http.Request, invalid bool) []string {
	if r.URL.Path != BasePath+MCPPath || s.svc.OAuth == nil {
		if invalid {
			return hdrChallengeInvalid
		}
		return hdrChallenge
	}
	c := `Bearer realm="api", resource_metadata="` + s.origin(r) + ProtectedResourcePath + BasePath + MCPPath + `", scope="` + oauth.ScopeAgent + `"`
	if invalid {
		c += `, error="invalid_token"`
	}
	return []string{c}
}

// protectedResource is a resource's metadata (RFC 9728, section 2).
type protectedResource struct {
	Resource               string   `json:"resource"`
	ResourceName           string   `json:"resource_name"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceDocumentation  string   `json:"resource_documentation"`
}

// handleProtectedResource answers the metadata of the MCP server (mcp) or of the
// API.
func (s *Server) handleProtectedResource(mcp bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rs := s.resources(r)
		m := protectedResource{Resource: rs[1], ResourceName: "Waystation API", AuthorizationServers: []string{s.origin(r)},
			ScopesSupported: oauth.SupportedScopes, BearerMethodsSupported: []string{"header"}, ResourceDocumentation: s.origin(r) + "/reference"}
		if mcp {
			m.Resource, m.ResourceName = rs[0], "Waystation MCP server"
		}
		writeMetadata(w, m)
	}
}

// authServer is the authorization server's metadata (RFC 8414, section 2).
type authServer struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
}

func (s *Server) handleAuthServer() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		o := s.origin(r)
		writeMetadata(w, authServer{Issuer: o, AuthorizationEndpoint: o + BasePath + OAuthAuthorizePath, TokenEndpoint: o + BasePath + OAuthTokenPath,
			RegistrationEndpoint: o + BasePath + OAuthRegisterPath, RevocationEndpoint: o + BasePath + OAuthRevokePath,
			ScopesSupported: oauth.SupportedScopes, ResponseTypesSupported: []string{"code"}, GrantTypesSupported: []string{"authorization_code", "refresh_token"},
			TokenEndpointAuthMethodsSupported: []string{"none"}, RevocationEndpointAuthMethods: []string{"none"}, CodeChallengeMethodsSupported: []string{"S256"},
			IssParameterSupported: true})
	}
}

// writeMetadata answers a metadata document, which publicRead lets any origin read
// and caches for five minutes.
func writeMetadata(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own types reach here
	}
	w.Header()["Content-Type"] = hdrJSON
	w.Write(body)
}

// oauthError answers err as RFC 6749 has token and revocation errors (section 5.2):
// {error, error_description}, 400, or 401 for invalid_client; an error that is not
// an OAuth one is a problem.
func (s *Server) oauthError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := oauth.AsError(err)
	if !ok {
		s.error(w, r, err)
		return
	}
	status := http.StatusBadRequest
	if e.Code == oauth.InvalidClient {
		status = http.StatusUnauthorized
	}
	w.Header()["Pragma"] = []string{"no-cache"}
	writeJSON(w, status, map[string]string{"error": e.Code, "error_description": e.Description})
}

// oauthForm reads the form of a token or revocation request: urlencoded, bounded,
// each parameter but resource at most once (RFC 6749, section 3.2).
func oauthForm(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return nil, &oauth.Error{Code: oauth.InvalidRequest, Description: "Send the parameters as application/x-www-form-urlencoded."}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxOAuthBody))
	if err != nil {
		return nil, &oauth.Error{Code: oauth.InvalidRequest, Description: "The body is over 64 KiB."}
	}
	f, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, &oauth.Error{Code: oauth.InvalidRequest, Description: "The body is not a form."}
	}
	for k, v := range f {
		if len(v) > 1 && k != "resource" {
			return nil, &oauth.Error{Code: oauth.InvalidRequest, Description: k + " is sent more than once."}
		}
	}
	return f, nil
}

// handleRegister registers a host (RFC 7591): a public client, its redirect URIs
// checked (https, or http on loopback; no fragment).
func (s *Server) handleRegister() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxOAuthBody))
		var m oauth.ClientMetadata
		if err != nil || json.Unmarshal(body, &m) != nil {
			s.oauthError(w, r, &oauth.Error{Code: oauth.InvalidClientMetadata, Description: "The body must be a JSON object of client metadata, at most 64 KiB."})
			return
		}
		c, err := s.svc.OAuth.Register(r.Context(), m, r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		if err != nil {
			s.oauthError(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{
			"client_id": c.ID, "client_id_issued_at": c.CreatedAt.Unix(), "client_name": c.Name, "redirect_uris": c.RedirectURIs,
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
			"token_endpoint_auth_method": "none", "scope": oauth.ScopeAgent})
	}
}

// handleAuthorize checks an authorization request and sends the person to the
// console to answer it. Until the client and its redirect URI are known to go
// together, a refusal is answered here; after, it goes back to the redirect URI.
func (s *Server) handleAuthorize() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = hdrNoStore
		q := r.URL.Query()
		for k, v := range q {
			if len(v) > 1 && k != "resource" {
				s.error(w, r, problem.Param(problem.UnknownParameter, k, k+" is sent more than once."))
				return
			}
		}
		p := oauth.AuthorizeParams{ResponseType: q.Get("response_type"), ClientID: q.Get("client_id"), RedirectURI: q.Get("redirect_uri"),
			Scope: q.Get("scope"), State: q.Get("state"), CodeChallenge: q.Get("code_challenge"), CodeChallengeMethod: q.Get("code_challenge_method"),
			Resource: q.Get("resource"), Resources: len(q["resource"])}
		req, err := s.svc.OAuth.Authorize(r.Context(), p, s.resources(r))
		if e, ok := oauth.AsError(err); ok {
			if e.Redirect {
				http.Redirect(w, r, oauth.ErrorRedirect(p.RedirectURI, p.State, s.origin(r), e), http.StatusFound)
				return
			}
			param := "redirect_uri"
			if e.Code == oauth.InvalidClient || p.ClientID == "" {
				param = "client_id"
			}
			s.error(w, r, problem.Param(problem.InvalidParameter, param, e.Code+": "+e.Description))
			return
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		http.Redirect(w, r, s.origin(r)+ConsentPath+req.ID, http.StatusSeeOther)
	}
}

// handleToken exchanges a code, or a refresh token, for tokens (RFC 6749, section
// 4.1.3 and 6).
func (s *Server) handleToken() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, err := oauthForm(w, r)
		if err != nil {
			s.oauthError(w, r, err)
			return
		}
		p := oauth.TokenParams{GrantType: f.Get("grant_type"), Code: f.Get("code"), RedirectURI: f.Get("redirect_uri"), ClientID: f.Get("client_id"),
			CodeVerifier: f.Get("code_verifier"), RefreshToken: f.Get("refresh_token"), Resource: f.Get("resource"), Scope: f.Get("scope"), Resources: len(f["resource"])}
		t, err := s.svc.OAuth.Token(r.Context(), p, s.resources(r))
		if err != nil {
			s.oauthError(w, r, err)
			return
		}
		w.Header()["Pragma"] = []string{"no-cache"}
		writeJSON(w, http.StatusOK, t)
	}
}

// handleRevoke revokes a token's grant (RFC 7009): 200 whether the token was known
// or not.
func (s *Server) handleRevoke() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, err := oauthForm(w, r)
		if err == nil {
			err = s.svc.OAuth.Revoke(r.Context(), f.Get("token"), f.Get("client_id"))
		}
		if err != nil {
			s.oauthError(w, r, err)
			return
		}
		w.Header()["Cache-Control"] = hdrNoStore
		w.WriteHeader(http.StatusOK)
	}
}
