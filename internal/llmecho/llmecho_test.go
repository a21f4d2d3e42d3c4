package llmecho

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	res, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// The stand-in answers what an OpenAI client asks, with the messages it received, so
// that what the proxy forwarded can be read in the answer.
func TestEchoAnswersWithTheMessagesItReceived(t *testing.T) {
	s := New()
	var got []string
	s.Received = func(echo string) { got = append(got, echo) }
	hs := httptest.NewServer(s)
	defer hs.Close()

	res, err := http.Get(hs.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Object string
		Data   []struct{ ID string }
	}
	json.NewDecoder(res.Body).Decode(&models)
	res.Body.Close()
	if res.StatusCode != 200 || models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != Model {
		t.Fatalf("models: %d %+v", res.StatusCode, models)
	}

	res = post(t, hs.URL, `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},
		{"role":"user","content":[{"type":"text","text":"Email the receipt to"},{"type":"text","text":"[redacted]"}]}]}`)
	var c struct {
		Object, Model string
		Choices       []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
	}
	json.NewDecoder(res.Body).Decode(&c)
	want := "system: Be brief.\nuser: Email the receipt to [redacted]"
	if res.StatusCode != 200 || c.Object != "chat.completion" || c.Model != "gpt-4o-mini" || len(c.Choices) != 1 ||
		c.Choices[0].Message.Content != want || c.Choices[0].Message.Role != "assistant" || c.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion: %d %+v", res.StatusCode, c)
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("received %q", got)
	}

	res = post(t, hs.URL, `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Email the receipt to [redacted]"}]}`)
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("stream: %d %q", res.StatusCode, ct)
	}
	var text strings.Builder
	var last string
	chunks := 0
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		last = data
		if data == "[DONE]" {
			break
		}
		var ch struct {
			Object  string
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil || ch.Object != "chat.completion.chunk" || len(ch.Choices) != 1 {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks++
		text.WriteString(ch.Choices[0].Delta.Content)
	}
	if last != "[DONE]" || chunks < 4 || text.String() != "user: Email the receipt to [redacted]" {
		t.Errorf("stream: %d chunks, %q, last %q", chunks, text.String(), last)
	}

	for _, body := range []string{`{`, `{"messages":[]}`, `[]`} {
		if res := post(t, hs.URL, body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d", body, res.StatusCode)
		}
	}
	res, err = http.Get(hs.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET chat completions: %d", res.StatusCode)
	}
}

// events reads a stream of server-sent events: each event's name (or "") and data.
func events(t *testing.T, res *http.Response) [][2]string {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("stream: %d %q", res.StatusCode, ct)
	}
	var out [][2]string
	name := ""
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			name = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, [2]string{name, v})
			name = ""
		}
	}
	return out
}

func postTo(t *testing.T, url, body string) *http.Response {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// The Responses API: the instructions and input items echoed, whole or streamed as
// OpenAI's events; offered a function, the stand-in calls it with the echo until its
// output comes back. Every request is told to Called as it came.
func TestEchoAnswersResponses(t *testing.T) {
	s := New()
	var calls []Call
	s.Called = func(c Call) { calls = append(calls, c) }
	hs := httptest.NewServer(s)
	defer hs.Close()
	url := hs.URL + "/v1/responses"

	var resp struct {
		Object, Status string
		Output         []struct {
			Type, Name, Arguments string
			Content               []struct{ Type, Text string }
		}
	}
	res := postTo(t, url, `{"model":"m","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"Pay [redacted]"}]},
		{"type":"function_call","call_id":"c1","name":"pay","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"paid"}],
		"tools":[{"type":"function","name":"pay","parameters":{}}]}`)
	json.NewDecoder(res.Body).Decode(&resp)
	want := "instructions: Be brief.\nuser: Pay [redacted]\nfunction_call: pay{}\nfunction_call_output: paid"
	if res.StatusCode != 200 || resp.Object != "response" || resp.Status != "completed" || len(resp.Output) != 1 ||
		resp.Output[0].Type != "message" || resp.Output[0].Content[0].Text != want {
		t.Fatalf("response: %d %+v", res.StatusCode, resp)
	}
	if len(calls) != 1 || calls[0].Path != "/v1/responses" || !strings.Contains(string(calls[0].Body), "Pay [redacted]") {
		t.Errorf("calls %+v", calls)
	}

	res = postTo(t, url, `{"model":"m","input":"Pay","tools":[{"type":"function","name":"pay","parameters":{}}]}`)
	json.NewDecoder(res.Body).Decode(&resp)
	if len(resp.Output) != 1 || resp.Output[0].Type != "function_call" || resp.Output[0].Name != "pay" || resp.Output[0].Arguments != `{"echo":"user: Pay"}` {
		t.Fatalf("call: %+v", resp)
	}

	var text, args strings.Builder
	var names []string
	for _, ev := range events(t, postTo(t, url, `{"model":"m","stream":true,"input":"Pay [redacted] now"}`)) {
		var e struct{ Type, Delta string }
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil || e.Type != ev[0] {
			t.Fatalf("event %q: %v", ev, err)
		}
		names = append(names, e.Type)
		if e.Type == "response.output_text.delta" {
			text.WriteString(e.Delta)
		}
	}
	if text.String() != "user: Pay [redacted] now" || names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Errorf("stream: %q %v", text.String(), names)
	}
	for _, ev := range events(t, postTo(t, url, `{"model":"m","stream":true,"input":"Pay","tools":[{"type":"function","name":"pay"}]}`)) {
		var e struct{ Type, Delta string }
		json.Unmarshal([]byte(ev[1]), &e)
		if e.Type == "response.function_call_arguments.delta" {
			args.WriteString(e.Delta)
		}
	}
	if args.String() != `{"echo":"user: Pay"}` {
		t.Errorf("streamed call: %q", args.String())
	}
	for _, body := range []string{`{`, `{"input":[]}`, `{"input":7}`} {
		if res := postTo(t, url, body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d", body, res.StatusCode)
		}
	}
}

// The Messages API: the system prompt and messages echoed, whole or streamed as
// Anthropic's events; offered a tool, the stand-in calls it with the echo until its
// result comes back.
func TestEchoAnswersMessages(t *testing.T) {
	s := New()
	var calls []Call
	s.Called = func(c Call) { calls = append(calls, c) }
	hs := httptest.NewServer(s)
	defer hs.Close()
	url := hs.URL + "/v1/messages"

	var msg struct {
		Type, Role string
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text, Name string
			Input            map[string]string
		}
	}
	res := postTo(t, url, `{"model":"m","max_tokens":9,"system":[{"type":"text","text":"Be brief."}],"tools":[{"name":"pay","input_schema":{}}],
		"messages":[{"role":"user","content":"Pay [redacted]"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"pay","input":{"a":"b"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"paid"}]}]}]}`)
	json.NewDecoder(res.Body).Decode(&msg)
	want := "system: Be brief.\nuser: Pay [redacted]\nassistant: tool_use pay{\"a\":\"b\"}\nuser: tool_result: paid"
	if res.StatusCode != 200 || msg.Type != "message" || msg.StopReason != "end_turn" || len(msg.Content) != 1 || msg.Content[0].Text != want {
		t.Fatalf("message: %d %+v", res.StatusCode, msg)
	}
	if len(calls) != 1 || calls[0].Path != "/v1/messages" {
		t.Errorf("calls %+v", calls)
	}

	res = postTo(t, url, `{"model":"m","max_tokens":9,"tools":[{"name":"pay","input_schema":{}}],"messages":[{"role":"user","content":"Pay"}]}`)
	json.NewDecoder(res.Body).Decode(&msg)
	if msg.StopReason != "tool_use" || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Input["echo"] != "user: Pay" {
		t.Fatalf("call: %+v", msg)
	}

	var text, args strings.Builder
	var names []string
	for _, stream := range []string{`{"model":"m","stream":true,"messages":[{"role":"user","content":"Pay [redacted] now"}]}`,
		`{"model":"m","stream":true,"tools":[{"name":"pay"}],"messages":[{"role":"user","content":"Pay"}]}`} {
		for _, ev := range events(t, postTo(t, url, stream)) {
			var e struct {
				Type  string
				Delta struct {
					Type, Text  string
					PartialJSON string `json:"partial_json"`
				}
			}
			if err := json.Unmarshal([]byte(ev[1]), &e); err != nil || e.Type != ev[0] {
				t.Fatalf("event %q: %v", ev, err)
			}
			names = append(names, e.Type)
			text.WriteString(e.Delta.Text)
			args.WriteString(e.Delta.PartialJSON)
		}
	}
	if text.String() != "user: Pay [redacted] now" || args.String() != `{"echo":"user: Pay"}` || names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Errorf("stream: %q %q %v", text.String(), args.String(), names)
	}
	for _, body := range []string{`{`, `{"messages":[]}`, `[]`} {
		if res := postTo(t, url, body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d", body, res.StatusCode)
		}
	}
}
