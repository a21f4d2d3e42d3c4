package x402

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// The contracts the upto scheme pays through on EVM networks (scheme_upto_evm.md):
// Uniswap's Permit2, the same address on every chain, and x402's upto proxy, the
// only spender an upto authorization names. The proxy moves at most the signed
// amount, to the signed payee, when called by the signed facilitator.
const (
	Permit2Address   = "0x000000000022D473030F116dDEE9F6B43aC78BA3"
	UptoProxyAddress = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002"
)

// UptoAuthorization is a Permit2 PermitWitnessTransferFrom as x402's upto scheme
// signs it: From lets the upto proxy move at most Permitted.Amount of
// Permitted.Token before Deadline, once for Nonce (a decimal uint256), to
// Witness.To, settled by Witness.Facilitator no earlier than Witness.ValidAfter.
type UptoAuthorization struct {
	From      string        `json:"from"`
	Permitted UptoPermitted `json:"permitted"`
	Spender   string        `json:"spender"`
	Nonce     string        `json:"nonce"`
	Deadline  string        `json:"deadline"`
	Witness   UptoWitness   `json:"witness"`
}

// UptoPermitted is the token and the most that may move.
type UptoPermitted struct {
	Token  string `json:"token"`
	Amount string `json:"amount"`
}

// UptoWitness binds the payee, the one facilitator that may settle and the start
// of the window into the signature.
type UptoWitness struct {
	To          string `json:"to"`
	Facilitator string `json:"facilitator"`
	ValidAfter  string `json:"validAfter"`
}

// UptoPayload is the payload of the upto scheme on EVM networks.
type UptoPayload struct {
	Signature            string            `json:"signature"`
	Permit2Authorization UptoAuthorization `json:"permit2Authorization"`
}

// ErrNotUptoEVM is an offer the upto-on-EVM signer cannot pay.
var ErrNotUptoEVM = errors.New("x402: not an upto offer on an EVM network with a facilitator address")

// UptoTerms are what an upto offer on an EVM network is signed with: the chain, the
// token, the ceiling and the facilitator its extra names.
type UptoTerms struct {
	ChainID     *big.Int
	Token       string
	Ceiling     string
	PayTo       string
	Facilitator string
}

// UptoTermsOf reads the terms of an upto offer on an EVM network.
func UptoTermsOf(o Offer) (UptoTerms, error) {
	ref, ok := strings.CutPrefix(NormalizeNetwork(o.Network), "eip155:")
	if o.Scheme != SchemeUpto || !ok || !common.IsHexAddress(o.Asset) || !common.IsHexAddress(o.PayTo) {
		return UptoTerms{}, ErrNotUptoEVM
	}
	chain, ok := new(big.Int).SetString(ref, 10)
	if !ok {
		return UptoTerms{}, ErrNotUptoEVM
	}
	if _, ok := ReadAmount(json.RawMessage(`"` + o.Ceiling + `"`)); !ok || o.Ceiling == "" || o.Ceiling == "0" {
		return UptoTerms{}, ErrNotUptoEVM
	}
	var extra struct {
		Facilitator String `json:"facilitatorAddress"`
	}
	if json.Unmarshal(o.Extra, &extra) != nil || !common.IsHexAddress(string(extra.Facilitator)) {
		return UptoTerms{}, ErrNotUptoEVM
	}
	return UptoTerms{ChainID: chain, Token: common.HexToAddress(o.Asset).Hex(), Ceiling: o.Ceiling,
		PayTo: common.HexToAddress(o.PayTo).Hex(), Facilitator: common.HexToAddress(string(extra.Facilitator)).Hex()}, nil
}

var permitWitnessTransferFrom = apitypes.Types{
	"EIP712Domain": {
		{Name: "name", Type: "string"}, {Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"},
	},
	"PermitWitnessTransferFrom": {
		{Name: "permitted", Type: "TokenPermissions"}, {Name: "spender", Type: "address"},
		{Name: "nonce", Type: "uint256"}, {Name: "deadline", Type: "uint256"}, {Name: "witness", Type: "Witness"},
	},
	"TokenPermissions": {{Name: "token", Type: "address"}, {Name: "amount", Type: "uint256"}},
	"Witness": {
		{Name: "to", Type: "address"}, {Name: "facilitator", Type: "address"}, {Name: "validAfter", Type: "uint256"},
	},
}

// UptoDigest is the EIP-712 hash of a on chain chainID under Permit2's domain: what
// the payer signs and Permit2 checks.
func UptoDigest(chainID *big.Int, a UptoAuthorization) ([]byte, error) {
	td := apitypes.TypedData{
		Types:       permitWitnessTransferFrom,
		PrimaryType: "PermitWitnessTransferFrom",
		Domain: apitypes.TypedDataDomain{Name: "Permit2", ChainId: (*math.HexOrDecimal256)(chainID),
			VerifyingContract: Permit2Address},
		Message: apitypes.TypedDataMessage{
			"permitted": map[string]any{"token": a.Permitted.Token, "amount": a.Permitted.Amount},
			"spender":   a.Spender, "nonce": a.Nonce, "deadline": a.Deadline,
			"witness": map[string]any{"to": a.Witness.To, "facilitator": a.Witness.Facilitator, "validAfter": a.Witness.ValidAfter},
		},
	}
	h, _, err := apitypes.TypedDataAndHash(td)
	return h, err
}

// UptoNonce is the Permit2 nonce of a payment's 32 random bytes, in decimal.
func UptoNonce(nonce []byte) string { return new(big.Int).SetBytes(nonce).String() }

// SignUpto signs an upto authorization of terms t from the payer: at most t.Ceiling,
// to t.PayTo, settled by t.Facilitator between validAfter and deadline, once for
// nonce. Deterministic, as Sign is.
func (s *Signer) SignUpto(t UptoTerms, validAfter, deadline int64, nonce []byte) (UptoPayload, error) {
	if len(nonce) != 32 {
		return UptoPayload{}, errors.New("x402: an upto nonce is 32 bytes")
	}
	a := UptoAuthorization{From: s.address, Permitted: UptoPermitted{Token: t.Token, Amount: t.Ceiling},
		Spender: common.HexToAddress(UptoProxyAddress).Hex(), Nonce: UptoNonce(nonce), Deadline: fmt.Sprint(deadline),
		Witness: UptoWitness{To: t.PayTo, Facilitator: t.Facilitator, ValidAfter: fmt.Sprint(max(validAfter, 0))}}
	digest, err := UptoDigest(t.ChainID, a)
	if err != nil {
		return UptoPayload{}, err
	}
	sig, err := crypto.Sign(digest, s.key)
	if err != nil {
		return UptoPayload{}, err
	}
	sig[64] += 27
	return UptoPayload{Signature: "0x" + common.Bytes2Hex(sig), Permit2Authorization: a}, nil
}

// The selectors the service reads Permit2's state with: the payer's allowance to
// Permit2 on a token (its one-time approval), and the bitmap of its used nonces.
var (
	allowanceSelector   = crypto.Keccak256([]byte("allowance(address,address)"))[:4]
	nonceBitmapSelector = crypto.Keccak256([]byte("nonceBitmap(address,uint256)"))[:4]
)

// Permit2Allowance is how much of the token at asset on network owner lets Permit2
// move: the one-time approval every upto payment needs, unless the seller sponsors
// it.
func (c *Chains) Permit2Allowance(ctx context.Context, network, asset, owner string) (*big.Int, error) {
	if !common.IsHexAddress(asset) || !common.IsHexAddress(owner) {
		return nil, errors.New("x402: Permit2 allowance: malformed asset or owner")
	}
	data := append(append(append([]byte{}, allowanceSelector...), common.LeftPadBytes(common.HexToAddress(owner).Bytes(), 32)...),
		common.LeftPadBytes(common.HexToAddress(Permit2Address).Bytes(), 32)...)
	out, err := c.callOn(ctx, network, common.HexToAddress(asset).Hex(), data)
	if err != nil {
		return nil, fmt.Errorf("x402: Permit2 allowance on %s: %w", network, err)
	}
	return new(big.Int).SetBytes(out), nil
}

// Permit2NonceUsed reports whether Permit2 on network has used owner's nonce (32
// bytes, its uint256): true once an upto settlement carrying it was mined, whatever
// amount it moved.
func (c *Chains) Permit2NonceUsed(ctx context.Context, network, owner string, nonce []byte) (bool, error) {
	if !common.IsHexAddress(owner) || len(nonce) != 32 {
		return false, errors.New("x402: Permit2 nonce: malformed owner or nonce")
	}
	n := new(big.Int).SetBytes(nonce)
	word, bit := new(big.Int).Rsh(n, 8), uint(n.Uint64()&0xff)
	data := append(append(append([]byte{}, nonceBitmapSelector...), common.LeftPadBytes(common.HexToAddress(owner).Bytes(), 32)...),
		common.LeftPadBytes(word.Bytes(), 32)...)
	out, err := c.callOn(ctx, network, Permit2Address, data)
	if err != nil {
		return false, fmt.Errorf("x402: Permit2 nonce on %s: %w", network, err)
	}
	return new(big.Int).SetBytes(out).Bit(int(bit)) == 1, nil
}

// callOn is call on network's endpoint, answering exactly one word.
func (c *Chains) callOn(ctx context.Context, network, to string, data []byte) ([]byte, error) {
	endpoint, ok := "", false
	if c != nil {
		endpoint, ok = c.urls[NormalizeNetwork(network)]
	}
	if !ok {
		return nil, ErrNoChain
	}
	out, err := c.call(ctx, endpoint, to, data)
	if err != nil {
		return nil, err
	}
	if len(out) != 32 {
		return nil, fmt.Errorf("answer of %d bytes, want 32", len(out))
	}
	return out, nil
}

// UptoQuery names an upto settlement to find on a chain: the transaction that used
// Owner's Permit2 Nonce on Network, and what it moved of Asset from Owner to PayTo.
// Transaction is the one the seller named, if any; the settlement was mined no
// earlier than Since and no later than Deadline (Unix seconds), the authorization's
// deadline, past which Permit2 refuses it.
type UptoQuery struct {
	Network, Asset, Owner, PayTo string
	Nonce                        []byte
	Transaction                  string
	Since, Deadline              int64
}

// Transfer is what a settlement transaction moved from a payer to a payee.
type Transfer struct {
	Transaction string
	Amount      *big.Int
}

// ErrNoSettlement is a chain that shows no transaction carrying an authorization in
// the blocks it could have been mined in.
var ErrNoSettlement = errors.New("x402: the chain shows no transaction settling the authorization")

// transferTopic is the topic of ERC-20's Transfer(address,address,uint256) event.
var transferTopic = common.BytesToHash(crypto.Keccak256([]byte("Transfer(address,address,uint256)"))).Hex()

// The bounds of the log query that finds a settlement whose transaction is not
// known: blocks asked at once (what public endpoints answer), the queries of one
// search, and the transactions looked at.
const (
	logSpan       = 1000
	maxLogQueries = 64
	maxCandidates = 64
)

// UptoSettlement finds on the chain the transaction that settled an upto
// authorization and what it moved: the sum of the token's Transfer logs from the
// owner to the payee in that transaction's receipt. The transaction is the one the
// seller named when it carries the authorization (its call data holds the nonce,
// 32 random bytes no other payment has) and succeeded; otherwise it is found by a
// bounded query of the token's Transfer logs from the owner to the payee in the
// blocks mined between q.Since and q.Deadline. ErrNoSettlement when neither finds
// it; ErrNoChain without an endpoint for the network.
func (c *Chains) UptoSettlement(ctx context.Context, q UptoQuery) (Transfer, error) {
	endpoint, ok := "", false
	if c != nil {
		endpoint, ok = c.urls[NormalizeNetwork(q.Network)]
	}
	if !ok {
		return Transfer{}, ErrNoChain
	}
	if !common.IsHexAddress(q.Asset) || !common.IsHexAddress(q.Owner) || !common.IsHexAddress(q.PayTo) || len(q.Nonce) != 32 {
		return Transfer{}, errors.New("x402: upto settlement: malformed asset, owner, payee or nonce")
	}
	if isTxHash(q.Transaction) {
		t, found, err := c.settlementIn(ctx, endpoint, q, q.Transaction)
		if err != nil || found {
			return t, err
		}
	}
	from, err := c.blockAt(ctx, endpoint, q.Since)
	if err != nil {
		return Transfer{}, fmt.Errorf("x402: upto settlement on %s: %w", q.Network, err)
	}
	until, err := c.blockAt(ctx, endpoint, q.Deadline+1)
	if err != nil {
		return Transfer{}, fmt.Errorf("x402: upto settlement on %s: %w", q.Network, err)
	}
	until-- // the last block mined by the deadline
	if until >= from && (until-from)/logSpan >= maxLogQueries {
		return Transfer{}, fmt.Errorf("x402: upto settlement on %s: %d blocks are too many to search", q.Network, until-from+1)
	}
	var seen []string
	for lo := from; lo <= until; lo += logSpan {
		var logs []rpcLog
		err := c.rpc(ctx, endpoint, "eth_getLogs", []any{map[string]any{
			"address": common.HexToAddress(q.Asset).Hex(), "fromBlock": quantity(lo), "toBlock": quantity(min(lo+logSpan-1, until)),
			"topics": []string{transferTopic, topicOf(q.Owner), topicOf(q.PayTo)},
		}}, &logs)
		if err != nil {
			return Transfer{}, fmt.Errorf("x402: upto settlement on %s: logs: %w", q.Network, err)
		}
		for _, l := range logs {
			if isTxHash(l.TransactionHash) && !slices.Contains(seen, strings.ToLower(l.TransactionHash)) && len(seen) < maxCandidates {
				seen = append(seen, strings.ToLower(l.TransactionHash))
			}
		}
	}
	for _, tx := range seen {
		t, found, err := c.settlementIn(ctx, endpoint, q, tx)
		if err != nil || found {
			return t, err
		}
	}
	return Transfer{}, ErrNoSettlement
}

// rpcLog is a log as a node answers it.
type rpcLog struct {
	Address         string   `json:"address"`
	Topics          []string `json:"topics"`
	Data            string   `json:"data"`
	TransactionHash string   `json:"transactionHash"`
	Removed         bool     `json:"removed"`
}

// settlementIn reads transaction tx: found when it carries q's authorization and
// succeeded, with what its receipt shows moved from the owner to the payee.
func (c *Chains) settlementIn(ctx context.Context, endpoint string, q UptoQuery, tx string) (Transfer, bool, error) {
	var t struct {
		Input string `json:"input"`
	}
	switch err := c.rpc(ctx, endpoint, "eth_getTransactionByHash", []any{tx}, &t); {
	case errors.Is(err, errNull):
		return Transfer{}, false, nil
	case err != nil:
		return Transfer{}, false, fmt.Errorf("x402: upto settlement on %s: transaction: %w", q.Network, err)
	}
	input, err := hex.DecodeString(strings.TrimPrefix(t.Input, "0x"))
	if err != nil || !carries(input, q.Nonce) {
		return Transfer{}, false, nil
	}
	var r struct {
		Status string   `json:"status"`
		Logs   []rpcLog `json:"logs"`
	}
	switch err := c.rpc(ctx, endpoint, "eth_getTransactionReceipt", []any{tx}, &r); {
	case errors.Is(err, errNull):
		return Transfer{}, false, nil
	case err != nil:
		return Transfer{}, false, fmt.Errorf("x402: upto settlement on %s: receipt: %w", q.Network, err)
	}
	if r.Status != "0x1" {
		return Transfer{}, false, nil
	}
	sum := new(big.Int)
	for _, l := range r.Logs {
		data, err := hex.DecodeString(strings.TrimPrefix(l.Data, "0x"))
		if l.Removed || !strings.EqualFold(l.Address, q.Asset) || len(l.Topics) != 3 || !strings.EqualFold(l.Topics[0], transferTopic) ||
			!strings.EqualFold(l.Topics[1], topicOf(q.Owner)) || !strings.EqualFold(l.Topics[2], topicOf(q.PayTo)) || err != nil || len(data) != 32 {
			continue
		}
		sum.Add(sum, new(big.Int).SetBytes(data))
	}
	return Transfer{Transaction: strings.ToLower(tx), Amount: sum}, true, nil
}

// carries reports whether call data holds nonce, at any offset: a settlement sent
// through a wrapping contract (a multicall, an account) holds it too, misaligned.
func carries(input, nonce []byte) bool { return len(input) > 4 && bytes.Contains(input[4:], nonce) }

// blockAt is the number of the first block mined at or after t (Unix seconds): the
// latest's successor when none is yet. It gallops back from the latest block, then
// halves, so a recent time costs a few reads.
func (c *Chains) blockAt(ctx context.Context, endpoint string, t int64) (uint64, error) {
	var latestHex string
	if err := c.rpc(ctx, endpoint, "eth_blockNumber", nil, &latestHex); err != nil {
		return 0, fmt.Errorf("block number: %w", err)
	}
	latest, err := strconv.ParseUint(strings.TrimPrefix(latestHex, "0x"), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("block number %q", Clean(latestHex, 80))
	}
	at := func(n uint64) (int64, error) {
		var b struct {
			Timestamp string `json:"timestamp"`
		}
		if err := c.rpc(ctx, endpoint, "eth_getBlockByNumber", []any{quantity(n), false}, &b); err != nil {
			return 0, fmt.Errorf("block %d: %w", n, err)
		}
		ts, err := strconv.ParseInt(strings.TrimPrefix(b.Timestamp, "0x"), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("block %d: timestamp %q", n, Clean(b.Timestamp, 80))
		}
		return ts, nil
	}
	ts, err := at(latest)
	if err != nil || ts < t {
		return latest + 1, err
	}
	// hi is mined at or after t; find lo, mined before it, or block 0.
	hi, step := latest, uint64(1)
	var lo uint64
	for {
		if hi < step {
			if ts, err = at(0); err != nil || ts >= t {
				return 0, err
			}
			lo = 0
			break
		}
		lo = hi - step
		if ts, err = at(lo); err != nil {
			return 0, err
		}
		if ts < t {
			break
		}
		hi, step = lo, step*2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ts, err = at(mid); err != nil {
			return 0, err
		}
		if ts < t {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// quantity is n as a JSON-RPC quantity.
func quantity(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

// topicOf is an address as an indexed event argument.
func topicOf(address string) string {
	return common.BytesToHash(common.HexToAddress(address).Bytes()).Hex()
}

func isTxHash(h string) bool {
	b, err := hex.DecodeString(strings.TrimPrefix(h, "0x"))
	return strings.HasPrefix(h, "0x") && err == nil && len(b) == 32
}
