package x402

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"strings"

	"github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"
	"github.com/gagliardetto/solana-go/programs/token"
)

// The exact scheme on Solana (scheme_exact_svm.md), as x402's reference client builds
// it: a version 0 transaction whose fee payer is the offer's feePayer (the
// facilitator, which signs last and sends it), holding a compute unit limit, a compute
// unit price, an SPL TransferChecked of the offer's mint from the payer's associated
// token account to the payee's, and a memo: the offer's extra.memo, else a nonce that
// keeps two payments of the same terms apart.
const (
	SVMComputeUnitLimit = 20_000 // the reference client's
	SVMComputeUnitPrice = 1      // micro-lamports a unit: the reference client's
	// SVMMaxComputeUnitPrice is the most the reference facilitator sponsors.
	SVMMaxComputeUnitPrice = 5_000_000
	maxMemo                = 256
)

// ExactSVMPayload is the payload of the exact scheme on Solana: the partially signed
// transaction, base64 of its wire form.
type ExactSVMPayload struct {
	Transaction string `json:"transaction"`
}

// ErrNotExactSVM is an offer the exact-on-Solana signer cannot pay.
var ErrNotExactSVM = errors.New("x402: not an exact offer on Solana in a known token, with the key that pays its fees")

// SVMTerms are what an exact offer on Solana asks: the payee, the mint and its
// decimals, the amount, the fee payer and the memo (empty for none).
type SVMTerms struct {
	Network  string
	Mint     solana.PublicKey
	Decimals uint8
	PayTo    solana.PublicKey
	Amount   uint64
	FeePayer solana.PublicKey
	Memo     string
}

// SVMTermsOf reads the terms of an exact offer on Solana, refusing before anything is
// signed an offer whose feePayer is not a public key, whose mint the service does not
// know (its decimals go into the transfer), whose amount does not fit a token amount,
// or whose memo is over 256 bytes.
func SVMTermsOf(o Offer) (SVMTerms, error) {
	network := NormalizeNetwork(o.Network)
	if o.Scheme != SchemeExact || Namespace(network) != "solana" {
		return SVMTerms{}, ErrNotExactSVM
	}
	a, ok := LookupAsset(network, o.Asset)
	if !ok {
		return SVMTerms{}, fmt.Errorf("%w: the mint is not one the service knows on %s", ErrNotExactSVM, network)
	}
	mint, err1 := solana.PublicKeyFromBase58(o.Asset)
	payTo, err2 := solana.PublicKeyFromBase58(o.PayTo)
	if err1 != nil || err2 != nil {
		return SVMTerms{}, fmt.Errorf("%w: the mint or payee is not a public key", ErrNotExactSVM)
	}
	var extra struct {
		FeePayer json.RawMessage `json:"feePayer"`
		Memo     json.RawMessage `json:"memo"`
	}
	if json.Unmarshal(o.Extra, &extra) != nil {
		return SVMTerms{}, fmt.Errorf("%w: extra is not an object", ErrNotExactSVM)
	}
	fp, ok := jsonString(extra.FeePayer)
	feePayer, err := solana.PublicKeyFromBase58(fp)
	if !ok || err != nil || feePayer.IsZero() {
		return SVMTerms{}, fmt.Errorf("%w: extra.feePayer is not a public key", ErrNotExactSVM)
	}
	memo := ""
	if present(extra.Memo) {
		if memo, ok = jsonString(extra.Memo); !ok || len(memo) > maxMemo {
			return SVMTerms{}, fmt.Errorf("%w: extra.memo is not a string of at most 256 bytes", ErrNotExactSVM)
		}
	}
	n, ok := new(big.Int).SetString(o.Amount, 10)
	if !ok || n.Sign() <= 0 || !n.IsUint64() {
		return SVMTerms{}, fmt.Errorf("%w: the amount is not a positive 64-bit token amount", ErrNotExactSVM)
	}
	return SVMTerms{Network: network, Mint: mint, Decimals: uint8(a.Decimals), PayTo: payTo, Amount: n.Uint64(),
		FeePayer: feePayer, Memo: memo}, nil
}

// SolanaSigner holds the payer's ed25519 key and signs exact payments on Solana with
// it. It never shows the key: printed or logged, it is its public key.
type SolanaSigner struct {
	key     solana.PrivateKey
	address solana.PublicKey
}

// ParseSolanaSigner reads a Solana keypair as wallets and solana-keygen write it: 64
// bytes in base58, or the JSON array of those 64 bytes; white space around it is
// ignored. Errors never quote the key.
func ParseSolanaSigner(s string) (*SolanaSigner, error) {
	s = strings.TrimSpace(s)
	var k solana.PrivateKey
	var err error
	if strings.HasPrefix(s, "[") {
		k, err = solana.PrivateKeyFromSolanaKeygenFileBytes([]byte(s))
	} else {
		k, err = solana.PrivateKeyFromBase58(s)
	}
	if err != nil || len(k) != ed25519.PrivateKeySize {
		return nil, errors.New("x402: the Solana payer key is not a 64-byte keypair in base58 or a JSON array of bytes")
	}
	// The keypair's second half must be the public key of its first.
	pub := ed25519.NewKeyFromSeed(k[:32]).Public().(ed25519.PublicKey)
	if !bytes.Equal(pub, k[32:]) {
		return nil, errors.New("x402: the Solana payer key's public half does not match its private half")
	}
	return &SolanaSigner{key: k, address: solana.PublicKeyFromBytes(pub)}, nil
}

// Address is the payer's public key, in base58.
func (s *SolanaSigner) Address() string { return s.address.String() }

func (s *SolanaSigner) String() string               { return "x402 Solana payer " + s.Address() }
func (s *SolanaSigner) GoString() string             { return s.String() }
func (s *SolanaSigner) LogValue() slog.Value         { return slog.StringValue(s.String()) }
func (s *SolanaSigner) MarshalJSON() ([]byte, error) { return json.Marshal(s.Address()) }

// MemoOf is the memo a payment of t carries: the seller's, else the hex of the first
// 16 bytes of the payment's nonce (what the reference client draws at random), so
// that the same payment gives the same transaction.
func MemoOf(t SVMTerms, nonce []byte) ([]byte, error) {
	if t.Memo != "" {
		return []byte(t.Memo), nil
	}
	if len(nonce) < 16 {
		return nil, errors.New("x402: a Solana payment needs a nonce of at least 16 bytes")
	}
	return []byte(hex.EncodeToString(nonce[:16])), nil
}

// Sign builds the exact transfer of t with the recent blockhash and the payment's
// nonce, signs it as the transfer's authority and leaves the fee payer's signature
// empty. Ed25519 signatures are deterministic: the same terms, blockhash and nonce
// always give the same transaction, byte for byte, so a payment signed again after a
// crash is the very same payment.
func (s *SolanaSigner) Sign(t SVMTerms, blockhash string, nonce []byte) (ExactSVMPayload, error) {
	hash, err := solana.HashFromBase58(blockhash)
	if err != nil {
		return ExactSVMPayload{}, errors.New("x402: the blockhash is not 32 bytes of base58")
	}
	if t.FeePayer.Equals(s.address) {
		return ExactSVMPayload{}, errors.New("x402: the offer's fee payer is the payer itself")
	}
	memo, err := MemoOf(t, nonce)
	if err != nil {
		return ExactSVMPayload{}, err
	}
	source, _, err := solana.FindAssociatedTokenAddress(s.address, t.Mint)
	if err != nil {
		return ExactSVMPayload{}, err
	}
	destination, _, err := solana.FindAssociatedTokenAddress(t.PayTo, t.Mint)
	if err != nil {
		return ExactSVMPayload{}, err
	}
	limit, err := computebudget.NewSetComputeUnitLimitInstruction(SVMComputeUnitLimit).ValidateAndBuild()
	if err != nil {
		return ExactSVMPayload{}, err
	}
	price, err := computebudget.NewSetComputeUnitPriceInstruction(SVMComputeUnitPrice).ValidateAndBuild()
	if err != nil {
		return ExactSVMPayload{}, err
	}
	transfer, err := token.NewTransferCheckedInstruction(t.Amount, t.Decimals, source, t.Mint, destination, s.address, nil).ValidateAndBuild()
	if err != nil {
		return ExactSVMPayload{}, err
	}
	// The reference client's memo names no account: the memo program needs none.
	memoIx := solana.NewInstruction(solana.MemoProgramID, solana.AccountMetaSlice{}, memo)
	tx, err := solana.NewTransaction([]solana.Instruction{limit, price, transfer, memoIx}, hash, solana.TransactionPayer(t.FeePayer))
	if err != nil {
		return ExactSVMPayload{}, err
	}
	tx.Message.SetVersion(solana.MessageVersionV0)
	if _, err := tx.PartialSign(func(k solana.PublicKey) *solana.PrivateKey {
		if k.Equals(s.address) {
			return &s.key
		}
		return nil
	}); err != nil {
		return ExactSVMPayload{}, err
	}
	b64, err := tx.ToBase64()
	if err != nil {
		return ExactSVMPayload{}, err
	}
	return ExactSVMPayload{Transaction: b64}, nil
}

// SolanaRPC reads recent blockhashes from Solana's JSON-RPC endpoints, one per
// network. It is safe for concurrent use.
type SolanaRPC struct {
	urls   map[string]string // CAIP-2 network to endpoint
	client *http.Client
}

// ParseSolanaRPC reads SOLANA_RPC_URL: one http(s) URL, for every network of
// networks, or network=URL pairs separated by commas (networks by CAIP-2 identifier
// or x402 v1 name).
func ParseSolanaRPC(v string, networks []string, client *http.Client) (*SolanaRPC, error) {
	if client == nil {
		client = http.DefaultClient
	}
	r := &SolanaRPC{urls: map[string]string{}, client: client}
	check := func(s string) (string, bool) {
		u, err := url.Parse(strings.TrimSpace(s))
		return u.String(), err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
	}
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "http://") || strings.HasPrefix(t, "https://") {
		u, ok := check(t)
		if !ok {
			return nil, errors.New("x402: not an http(s) URL")
		}
		for _, n := range networks {
			r.urls[NormalizeNetwork(n)] = u
		}
		return r, nil
	}
	for pair := range strings.SplitSeq(v, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		network, endpoint, _ := strings.Cut(pair, "=")
		network = NormalizeNetwork(strings.TrimSpace(network))
		u, ok := check(endpoint)
		if !ok || Namespace(network) != "solana" || !IsCAIP2(network) {
			return nil, fmt.Errorf("x402: %q is not a Solana network=http(s) URL pair", pair)
		}
		r.urls[network] = u
	}
	return r, nil
}

// Networks are the networks the RPC answers for.
func (r *SolanaRPC) Networks() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.urls))
	for n := range r.urls {
		out = append(out, n)
	}
	return out
}

// Has reports whether the RPC answers for network.
func (r *SolanaRPC) Has(network string) bool {
	if r == nil {
		return false
	}
	_, ok := r.urls[NormalizeNetwork(network)]
	return ok
}

// LatestBlockhash is the network's latest confirmed blockhash, in base58: what a
// transaction is valid from, for about 150 blocks. Errors never quote the endpoint,
// whose URL may carry a provider's key.
func (r *SolanaRPC) LatestBlockhash(ctx context.Context, network string) (string, error) {
	if !r.Has(network) {
		return "", ErrNoChain
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "getLatestBlockhash",
		"params": []any{map[string]string{"commitment": "confirmed"}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.urls[NormalizeNetwork(network)], bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := r.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("x402: latest blockhash on %s: %w", network, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("x402: latest blockhash on %s: the endpoint answered %s", network, res.Status)
	}
	var answer struct {
		Result *struct {
			Value struct {
				Blockhash string `json:"blockhash"`
			} `json:"value"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&answer); err != nil {
		return "", fmt.Errorf("x402: latest blockhash on %s: the answer is not JSON-RPC", network)
	}
	switch {
	case answer.Error != nil:
		return "", fmt.Errorf("x402: latest blockhash on %s: error %d: %s", network, answer.Error.Code, Clean(answer.Error.Message, 200))
	case answer.Result == nil:
		return "", fmt.Errorf("x402: latest blockhash on %s: no result", network)
	}
	if _, err := solana.HashFromBase58(answer.Result.Value.Blockhash); err != nil {
		return "", fmt.Errorf("x402: latest blockhash on %s: not a blockhash", network)
	}
	return answer.Result.Value.Blockhash, nil
}

// Landing is Solana's word on a payment's transaction: landed (Transaction is its
// id, the fee payer's signature), or unable to land any more (Expired: its
// blockhash expired, or it failed), or neither yet.
type Landing struct {
	Landed      bool
	Transaction string
	Expired     bool
}

// maxLandingSignatures and maxLandingLookups bound the payer's recent transactions
// listed, and those read, to find one payment's.
const (
	maxLandingSignatures = 100
	maxLandingLookups    = 20
)

// Landing looks up the payment tx, as the service signed it, on network. Its id is
// the fee payer's signature, which the service never sees, so it is found among the
// payer's recent transactions (getSignaturesForAddress, those whose memo is its
// memo) by the payer's own signature (getTransaction); its blockhash's expiry
// (isBlockhashValid) is read first, so that a transaction landed before it expired
// is always found. ErrNoChain when the RPC has no endpoint for network.
func (r *SolanaRPC) Landing(ctx context.Context, network string, tx ExactSVMPayload) (Landing, error) {
	if !r.Has(network) {
		return Landing{}, ErrNoChain
	}
	t, err := solana.TransactionFromBase64(tx.Transaction)
	if err != nil {
		return Landing{}, fmt.Errorf("x402: landing on %s: not a transaction", network)
	}
	var ours solana.Signature
	var payer solana.PublicKey
	for i, sig := range t.Signatures {
		if !sig.IsZero() && i < len(t.Message.AccountKeys) {
			ours, payer = sig, t.Message.AccountKeys[i]
		}
	}
	if payer.IsZero() {
		return Landing{}, fmt.Errorf("x402: landing on %s: the transaction carries no signature", network)
	}
	var memo string
	for _, ix := range t.Message.Instructions {
		if p, err := t.Message.Program(ix.ProgramIDIndex); err == nil && p.Equals(solana.MemoProgramID) {
			memo = string(ix.Data)
		}
	}
	var valid struct {
		Value bool `json:"value"`
	}
	if err := r.call(ctx, network, "isBlockhashValid", []any{t.Message.RecentBlockhash.String(),
		map[string]string{"commitment": "confirmed"}}, &valid); err != nil {
		return Landing{}, err
	}
	var sigs []struct {
		Signature string  `json:"signature"`
		Memo      *string `json:"memo"`
	}
	if err := r.call(ctx, network, "getSignaturesForAddress", []any{payer.String(),
		map[string]any{"limit": maxLandingSignatures, "commitment": "confirmed"}}, &sigs); err != nil {
		return Landing{}, err
	}
	// Only a search that saw every candidate may conclude the transaction never
	// landed: a payer busy enough to fill the page, or candidates past the bound,
	// leave it undecided rather than failed.
	exhaustive := len(sigs) < maxLandingSignatures
	looked := 0
	for _, s := range sigs {
		if memo != "" && (s.Memo == nil || !strings.Contains(*s.Memo, memo)) {
			continue
		}
		if looked++; looked > maxLandingLookups {
			exhaustive = false
			break
		}
		var got *struct {
			Transaction []string `json:"transaction"`
			Meta        *struct {
				Err json.RawMessage `json:"err"`
			} `json:"meta"`
		}
		if err := r.call(ctx, network, "getTransaction", []any{s.Signature, map[string]any{"encoding": "base64",
			"commitment": "confirmed", "maxSupportedTransactionVersion": 0}}, &got); err != nil {
			return Landing{}, err
		}
		if got == nil || len(got.Transaction) == 0 {
			continue
		}
		landed, err := solana.TransactionFromBase64(got.Transaction[0])
		if err != nil || len(landed.Signatures) == 0 {
			continue
		}
		for _, sig := range landed.Signatures {
			if sig != ours {
				continue
			}
			if got.Meta != nil && len(got.Meta.Err) > 0 && string(got.Meta.Err) != "null" {
				// It landed and failed: nothing moved, and it never can again.
				return Landing{Expired: true}, nil
			}
			return Landing{Landed: true, Transaction: landed.Signatures[0].String()}, nil
		}
	}
	return Landing{Expired: !valid.Value && exhaustive}, nil
}

// Slot is the network's latest finalized slot, as the reference client reads the
// slot an upto channel opens at when the seller names none: the reference
// facilitator refuses an open at a slot ahead of its own, which it reads finalized.
// Errors never quote the endpoint.
func (r *SolanaRPC) Slot(ctx context.Context, network string) (uint64, error) {
	if !r.Has(network) {
		return 0, ErrNoChain
	}
	var slot uint64
	if err := r.call(ctx, network, "getSlot", []any{map[string]string{"commitment": "finalized"}}, &slot); err != nil {
		return 0, err
	}
	if slot == 0 {
		return 0, fmt.Errorf("x402: getSlot on %s: slot 0", network)
	}
	return slot, nil
}

// call makes one JSON-RPC call on network's endpoint and reads its result into out.
// Errors never quote the endpoint.
func (r *SolanaRPC) call(ctx context.Context, network, method string, params []any, out any) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.urls[NormalizeNetwork(network)], bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := r.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("x402: %s on %s: %w", method, network, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("x402: %s on %s: the endpoint answered %s", method, network, res.Status)
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 4<<20)).Decode(&answer); err != nil {
		return fmt.Errorf("x402: %s on %s: the answer is not JSON-RPC", method, network)
	}
	switch {
	case answer.Error != nil:
		return fmt.Errorf("x402: %s on %s: error %d: %s", method, network, answer.Error.Code, Clean(answer.Error.Message, 200))
	case len(answer.Result) == 0:
		return fmt.Errorf("x402: %s on %s: no result", method, network)
	}
	if err := json.Unmarshal(answer.Result, out); err != nil {
		return fmt.Errorf("x402: %s on %s: an unexpected result", method, network)
	}
	return nil
}
