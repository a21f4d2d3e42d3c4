package embedding

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/telemetry"
)

// ClientConfig configures an OpenAI-compatible embeddings provider.
type ClientConfig struct {
	// URL is the provider's base URL (".../v1") or the full ".../v1/embeddings" URL.
	URL        string
	APIKey     string
	Model      string
	Dimensions int
	// Timeout bounds one call, connection included; 5s when zero.
	Timeout time.Duration
}

// Client calls an OpenAI-compatible POST /v1/embeddings.
type Client struct {
	cfg  ClientConfig
	url  string
	http *http.Client
}

var _ Embedder = (*Client)(nil)

// NewClient makes a client; it does not call the provider.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.URL == "" || cfg.Model == "" || cfg.Dimensions <= 0 {
		return nil, fmt.Errorf("embedding: a provider needs a URL, a model and dimensions")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	u := cfg.URL
	if !bytes.HasSuffix([]byte(u), []byte("/embeddings")) {
		u = string(bytes.TrimSuffix([]byte(u), []byte("/"))) + "/embeddings"
	}
	return &Client{cfg: cfg, url: u, http: &http.Client{Timeout: cfg.Timeout}}, nil
}

// Model is the provider's model id, prefixed so that it never collides with a builtin.
func (c *Client) Model() string { return "openai:" + c.cfg.Model }

// Dimensions is the configured vector size.
func (c *Client) Dimensions() int { return c.cfg.Dimensions }

type embeddingsRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed sends the texts in one request and checks what comes back: one vector of the
// configured size per text, normalised here in case the provider does not.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingsRequest{Model: c.cfg.Model, Input: texts, Dimensions: c.cfg.Dimensions})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embedding: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	// A query's embedding is a child of the search's span, under a trace of its own
	// when the search's trace is its caller's (a model provider learns nothing an
	// agent chose).
	if tp := telemetry.UpstreamTraceparent(ctx); tp != "" {
		req.Header.Set("Traceparent", tp)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embedding: provider: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("embedding: provider: read: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embedding: provider answered %d", res.StatusCode)
	}
	var er embeddingsResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, fmt.Errorf("embedding: provider: decode: %w", err)
	}
	if len(er.Data) != len(texts) {
		return nil, fmt.Errorf("embedding: provider returned %d vectors for %d texts", len(er.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil || len(d.Embedding) != c.cfg.Dimensions {
			return nil, fmt.Errorf("embedding: provider returned a malformed vector")
		}
		out[d.Index] = normalize(d.Embedding)
	}
	return out, nil
}

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	s := float32(1 / sqrt(n))
	for i := range v {
		v[i] *= s
	}
	return v
}
