package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/problem"
)

// readBody reads a request body of at most the configured size.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.svc.MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, bodyTooLarge(tooLarge.Limit)
	}
	if err != nil {
		return nil, problem.New(problem.ValidationFailed, "The body could not be read.")
	}
	return body, nil
}

// bodyTooLarge refuses a body of more than limit bytes.
func bodyTooLarge(limit int64) error {
	return problem.New(problem.PayloadTooLarge, "The body is larger than "+strconv.FormatInt(limit, 10)+" bytes.")
}

// validator is a request body that checks itself once decoded.
type validator interface {
	validate() error
}

// httpURL checks raw, the value of the input name, as an absolute http or https URL
// of at most 2048 bytes: a seller's address the service may look up or call.
func httpURL(name, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(raw) > 2048 {
		return problem.Invalid(name + " must be an absolute http or https URL of at most 2048 bytes.")
	}
	return nil
}

// readJSON reads a bounded request body and decodes it into req, which validates
// itself; the raw body is returned for idempotency checks. What a request writes is
// kept, shown to people or sent on, so a body holding one of the user's protected
// values anywhere, in any written form, is refused: protected_value_detected.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, req validator) ([]byte, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	return body, s.takeJSON(r.Context(), body, req)
}

// takeJSON decodes body into req, which validates itself, and refuses it when it
// holds one of the user's protected values, as readJSON says.
func (s *Server) takeJSON(ctx context.Context, body []byte, req validator) error {
	err := readObject(body, req)
	if name, ok := unknownMember(err); ok {
		return s.refuseMember(ctx, name)
	}
	if err := validated(err, req); err != nil {
		return err
	}
	parts := jsonParts(body, "")
	if h, ok := req.(textHolder); ok {
		parts = append(parts, h.heldText()...)
	}
	return s.checkParts(ctx, parts)
}

// textHolder is a request body that holds text its JSON does not show (an image's
// metadata), which is checked for protected values with the rest of it.
type textHolder interface {
	heldText() []string
}

// readValues is readJSON for a body that carries values to save (a memory item's
// fields): the members named value are what it is for, and everything else of it
// (labels, sites, names) is checked for the user's protected values.
func (s *Server) readValues(w http.ResponseWriter, r *http.Request, req validator) ([]byte, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := decode(body, req); err != nil {
		return body, err
	}
	return body, s.checkValues(r.Context(), body)
}

// decode reads exactly one JSON object into v, refusing unknown members, and
// validates it.
func decode(body []byte, v validator) error {
	return validated(readObject(body, v), v)
}

// validated is the answer to v read into by readObject with err: err as a problem,
// else v's own check.
func validated(err error, v validator) error {
	if err != nil {
		if _, ok := err.(*problem.Error); ok {
			return err
		}
		return problem.New(problem.ValidationFailed, "The body is not the JSON object this route takes: "+jsonErrorText(err))
	}
	return v.validate()
}

// readObject reads exactly one JSON object into v, refusing unknown members: the
// decoder's own error, or a problem when more follows the object.
func readObject(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return problem.New(problem.ValidationFailed, "The body holds more than one JSON value.")
	}
	if _, err := d.Token(); err != io.EOF {
		return problem.New(problem.ValidationFailed, "The body holds more than one JSON value.")
	}
	return nil
}

// unknownMember is the name of the member err, readObject's, refuses as one the body
// does not take.
func unknownMember(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	quoted, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return "", false
	}
	name, err := strconv.Unquote(quoted)
	return name, err == nil
}

// refuseMember refuses a body for a member its route does not take, named so that a
// typo is found at once, unless the name holds one of the user's protected values:
// then the body is refused as one holding a protected value, which quotes nothing.
func (s *Server) refuseMember(ctx context.Context, name string) error {
	if err := s.checkParts(ctx, []string{name}); err != nil {
		return err
	}
	const most = 64
	if len(name) > most {
		cut := most
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	return problem.New(problem.ValidationFailed, "The body is not the JSON object this route takes: it takes no member "+
		strconv.Quote(name)+"; the OpenAPI document lists the members of each body.")
}

// decodeSealed is decode for bodies that carry values people provide: its errors
// name no member and no value, since a misplaced value could sit in either.
func decodeSealed(body []byte, v validator) error {
	err := decode(body, v)
	var p *problem.Error
	if errors.As(err, &p) && strings.HasPrefix(p.Detail, "The body is not the JSON object") {
		return problem.New(problem.ValidationFailed, "The body is not the JSON object this route takes.")
	}
	return err
}

// jsonErrorText describes a decoding error without echoing anything of the body: a
// member it names is one of the route's own, never one the caller made up, since a
// caller's member name may be a protected value as well as any string (takeJSON names
// an unknown member once it has checked it is none: see refuseMember).
func jsonErrorText(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return "member " + strconv.Quote(typeErr.Field) + " must be " + typeErr.Type.String() + "."
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return "malformed JSON at byte " + strconv.FormatInt(syntaxErr.Offset, 10) + "."
	}
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		return "a member it does not take; the OpenAPI document lists the members of each body."
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the body is empty or cut short."
	}
	return "not a JSON object."
}

// writeJSON answers v as JSON that no cache keeps.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own types reach here
	}
	writeBody(w, status, hdrJSON[0], body)
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h["Cache-Control"] = hdrNoStore
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// serve is a route's handler h, whose refusals are its error: serve answers it as
// problem+json (see Server.error), so that a handler returns what refuses the
// request instead of answering it itself.
func (s *Server) serve(h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.error(w, r, err)
		}
	}
}
