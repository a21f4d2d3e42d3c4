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
