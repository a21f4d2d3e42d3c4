package x402

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// ErrNoChain is the answer of Chains for a network it has no RPC endpoint for.
var ErrNoChain = errors.New("x402: no RPC endpoint for this network")

// authorizationState is the selector of EIP-3009's authorizationState(address,bytes32):
// whether the token has used an authorizer's nonce, by transfer or cancellation.
var authorizationState = crypto.Keccak256([]byte("authorizationState(address,bytes32)"))[:4]

// Chains reads EVM networks through their JSON-RPC endpoints: the state of EIP-3009
// authorizations and of Permit2's, the evidence that tells whether a payment whose
// answer was lost settled, and what an upto settlement moved. It is safe for
// concurrent use.
type Chains struct {
	urls   map[string]string // CAIP-2 network to endpoint
	client *http.Client
}

// ParseChains reads a list of network=URL pairs separated by commas
// ("eip155:8453=https://mainnet.base.org,eip155:84532=http://localhost:4021/rpc");
// networks may be given by their x402 v1 names too. An empty list is no chain.
func ParseChains(v string, client *http.Client) (*Chains, error) {
	if client == nil {
		client = http.DefaultClient
	}
	c := &Chains{urls: map[string]string{}, client: client}
	for pair := range strings.SplitSeq(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		network, endpoint, ok := strings.Cut(pair, "=")
		network = NormalizeNetwork(strings.TrimSpace(network))
		u, err := url.Parse(strings.TrimSpace(endpoint))
		if !ok || !strings.HasPrefix(network, "eip155:") || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("x402: %q is not an EVM network=http(s) URL pair", pair)
		}
		c.urls[network] = u.String()
	}
	return c, nil
}

// Networks are the networks the chains answer for.
func (c *Chains) Networks() []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, len(c.urls))
	for n := range c.urls {
		out = append(out, n)
	}
	return out
}

// AuthorizationUsed reports whether the token at asset on network has used from's
// nonce: true once a transferWithAuthorization carrying it was mined.
func (c *Chains) AuthorizationUsed(ctx context.Context, network, asset, from string, nonce []byte) (bool, error) {
	if !common.IsHexAddress(asset) || !common.IsHexAddress(from) || len(nonce) != 32 {
		return false, fmt.Errorf("x402: authorization state: malformed asset, payer or nonce")
	}
	endpoint, ok := "", false
	if c != nil {
		endpoint, ok = c.urls[NormalizeNetwork(network)]
	}
	if !ok {
		return false, ErrNoChain
	}
	data := make([]byte, 0, 4+64)
	data = append(data, authorizationState...)
	data = append(data, common.LeftPadBytes(common.HexToAddress(from).Bytes(), 32)...)
	data = append(data, nonce...)
	out, err := c.call(ctx, endpoint, common.HexToAddress(asset).Hex(), data)
	if err != nil {
		return false, fmt.Errorf("x402: authorization state on %s: %w", network, err)
	}
	if len(out) != 32 {
		return false, fmt.Errorf("x402: authorization state on %s: answer of %d bytes, want 32", network, len(out))
	}
	return out[31] == 1, nil
}

// call makes one JSON-RPC eth_call of a contract at the latest block. The call data
// goes as both input and data: nodes read one or the other.
func (c *Chains) call(ctx context.Context, endpoint, to string, data []byte) ([]byte, error) {
	var out string
	err := c.rpc(ctx, endpoint, "eth_call", []any{map[string]string{"to": to, "input": "0x" + hex.EncodeToString(data),
		"data": "0x" + hex.EncodeToString(data)}, "latest"}, &out)
	if err != nil {
		return nil, err
	}
	return hex.DecodeString(strings.TrimPrefix(out, "0x"))
}

// errNull is a JSON-RPC result of null: what a node answers for a transaction or a
// block it does not know.
var errNull = errors.New("the endpoint answered null")

// rpc makes one JSON-RPC call of method on endpoint and decodes its result into out;
// errNull when the result is null.
func (c *Chains) rpc(ctx context.Context, endpoint, method string, params []any, out any) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("the endpoint answered %s", res.Status)
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 8<<20)).Decode(&answer); err != nil {
		return fmt.Errorf("the endpoint's answer is not JSON-RPC: %w", err)
	}
	switch {
	case answer.Error != nil:
		return fmt.Errorf("error %d: %s", answer.Error.Code, Clean(answer.Error.Message, 200))
	case len(answer.Result) == 0:
		return errors.New("the endpoint answered no result")
	case string(answer.Result) == "null":
		return errNull
	}
	if err := json.Unmarshal(answer.Result, out); err != nil {
		return fmt.Errorf("the endpoint's %s result: %w", method, err)
	}
	return nil
}

// DecodeAuthorizationState reads the call data of authorizationState(from, nonce), so
// that a stand-in for a chain (the local seller's) can answer it.
func DecodeAuthorizationState(data []byte) (from string, nonce []byte, ok bool) {
	if len(data) != 4+64 || string(data[:4]) != string(authorizationState) {
		return "", nil, false
	}
	return common.BytesToAddress(data[4:36]).Hex(), data[36:68], true
}
