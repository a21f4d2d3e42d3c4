package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpErrorTexts are what a JSON-RPC error of the MCP server says, by its code. The
// SDK's own errors quote the request (a method's name, a resource's uri, a prompt's
// name, params it could not decode, a batch's methods, a protocol version header),
// and any of those may be a protected value an agent wants repeated or logged; so
// every error the server answers says its code's fixed text, and nothing more.
var mcpErrorTexts = map[int64]string{
	jsonrpc.CodeParseError:     "The body is not a JSON-RPC 2.0 message this server can read.",
	jsonrpc.CodeInvalidRequest: "The message is not a JSON-RPC 2.0 request this server takes.",
	jsonrpc.CodeMethodNotFound: "The method is not one this server has, in this protocol version: initialize, tools/list and tools/call are.",
	jsonrpc.CodeInvalidParams:  "The params do not fit the method: tools/list names the tools and gives their input schemas.",
	jsonrpc.CodeInternalError:  "The server failed to answer the call.",
	-32002:                     "There is no such resource: resources/list names the resources there are.",
	-32022:                     "The protocol version is not one this server speaks.",
}

const mcpQuiet = " This message repeats nothing of the request."

// mcpErrorText is the fixed text of a JSON-RPC error code.
func mcpErrorText(code int64) string {
	if t, ok := mcpErrorTexts[code]; ok {
		return t + mcpQuiet
	}
	return "The call failed." + mcpQuiet
}

// mcpHTTPText is what an answer of the transport that is not JSON-RPC (a body the
// SDK refused with a plain-text error) says, by its status.
func mcpHTTPText(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "The body is not a JSON-RPC 2.0 message this server takes (one message a POST, of a method it has), or a header is not one it reads." + mcpQuiet
	case http.StatusNotAcceptable:
		return "Accept must list application/json and text/event-stream." + mcpQuiet
	case http.StatusUnsupportedMediaType:
		return "Content-Type must be application/json." + mcpQuiet
	case http.StatusMethodNotAllowed:
		return "This MCP server takes POST." + mcpQuiet
	}
	return http.StatusText(status) + "." + mcpQuiet
}

// quietErrors serves next, an MCP transport, with every error it answers said in
// fixed words: a JSON-RPC error's message is its code's text (mcpErrorText) and its
// data is dropped, in a JSON body or an event stream alike, and a plain-text error
// of the transport says its status's text (mcpHTTPText). Results pass as they are;
// a tool's own failure is a result, and quietCalls has made it say nothing of the
// call.
func quietErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := &quietWriter{ResponseWriter: w}
		next.ServeHTTP(q, r)
		q.finish()
	})
}

// quietWriter rewrites an MCP answer on its way out, as quietErrors says: an event
// stream line by line as it comes (each data line is one message), a JSON body once
// whole, and a plain-text error at once.
type quietWriter struct {
	http.ResponseWriter
	mode    int // 0 undecided, then one of the modes below
	status  int
	pending bytes.Buffer // an event stream's unfinished line, or a whole JSON body
}

const (
	quietPass = iota + 1
	quietStream
	quietJSON
	quietPlain
)

func (q *quietWriter) WriteHeader(code int) {
	if q.mode != 0 {
		return
	}
	q.status = code
	ct, _, _ := mime.ParseMediaType(q.Header().Get("Content-Type"))
	switch {
	case ct == "text/event-stream":
		q.mode = quietStream
	case ct == "application/json":
		q.mode = quietJSON
		q.Header().Del("Content-Length")
		return // written once the body is whole
	case code >= 400:
		q.mode = quietPlain
		text := mcpHTTPText(code)
		q.Header().Set("Content-Type", "text/plain; charset=utf-8")
		q.Header().Set("Content-Length", strconv.Itoa(len(text)))
		q.ResponseWriter.WriteHeader(code)
		q.ResponseWriter.Write([]byte(text))
		return
	default:
		q.mode = quietPass
	}
	q.ResponseWriter.WriteHeader(code)
}

func (q *quietWriter) Write(b []byte) (int, error) {
	if q.mode == 0 {
		q.WriteHeader(http.StatusOK)
	}
	switch q.mode {
	case quietPlain:
		return len(b), nil
	case quietJSON:
		return q.pending.Write(b)
	case quietStream:
		q.pending.Write(b)
		for {
			line, err := q.pending.ReadBytes('\n')
			if err != nil { // an unfinished line waits for the rest
				rest := append([]byte(nil), line...)
				q.pending.Reset()
				q.pending.Write(rest)
				return len(b), nil
			}
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				line = append(append([]byte("data: "), quietMessage(bytes.TrimRight(data, "\r\n"))...), '\n')
			}
			if _, err := q.ResponseWriter.Write(line); err != nil {
				return 0, err
			}
		}
	}
	return q.ResponseWriter.Write(b)
}

// Flush passes an event stream's finished lines on.
func (q *quietWriter) Flush() {
	if q.mode == quietJSON {
		return
	}
	if f, ok := q.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (q *quietWriter) Unwrap() http.ResponseWriter { return q.ResponseWriter }

// finish writes what is held back: a JSON body, rewritten, or an event stream's
// last line.
func (q *quietWriter) finish() {
	switch q.mode {
	case quietJSON:
		body := quietMessage(bytes.TrimSpace(q.pending.Bytes()))
		q.Header().Set("Content-Length", strconv.Itoa(len(body)))
		q.ResponseWriter.WriteHeader(q.status)
		q.ResponseWriter.Write(body)
	case quietStream:
		if q.pending.Len() > 0 {
			q.ResponseWriter.Write(q.pending.Bytes())
		}
	}
}

// quietMessage is a JSON-RPC message, or a batch of them, with each error's message
// made its code's text and its data dropped; anything else is as it was.
func quietMessage(raw []byte) []byte {
	if bytes.HasPrefix(raw, []byte("[")) {
		var batch []json.RawMessage
		if json.Unmarshal(raw, &batch) != nil {
			return raw
		}
		for i, m := range batch {
			batch[i] = quietMessage(m)
		}
		out, _ := json.Marshal(batch)
		return out
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(raw, &msg) != nil || msg["error"] == nil {
		return raw
	}
	var e struct {
		Code int64 `json:"code"`
	}
	json.Unmarshal(msg["error"], &e)
	msg["error"], _ = json.Marshal(map[string]any{"code": e.Code, "message": mcpErrorText(e.Code)})
	out, _ := json.Marshal(msg)
	return out
}

// quietLog is the logger the MCP SDK is given: the SDK logs a client's log level,
// a method's name and errors that quote the request, so its lines keep their
// level and the words of their message before any ':', and no attribute.
func quietLog(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(quietHandler{l.Handler()})
}

type quietHandler struct{ next slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	msg, _, _ := strings.Cut(r.Message, ":")
	return h.next.Handle(ctx, slog.NewRecord(r.Time, r.Level, "mcp: "+msg, r.PC))
}

func (h quietHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h quietHandler) WithGroup(string) slog.Handler      { return h }

// quietCalls keeps the SDK's own refusals of a tool call from repeating it: a schema
// the arguments do not fit names the properties the caller made up and quotes its
// values, JSON it cannot read quotes them, and an unknown tool is named; any of them
// may be a protected value on its way to a model. They say what failed, not what was
// sent; the service's own failures (toolFailure) pass as they are.
func quietCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/call" {
			return res, err
		}
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			return nil, &jsonrpc.Error{Code: wire.Code, Message: "The call is not one this server takes: tools/list names its tools and their input schemas. This message repeats nothing of the call."}
		}
		var own toolFailure
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError && !errors.As(r.GetError(), &own) {
			r.Content = []mcp.Content{&mcp.TextContent{Text: "validation_failed: the arguments do not fit the tool's input schema (tools/list gives it). This message repeats nothing of them."}}
		}
		return res, err
	}
}
