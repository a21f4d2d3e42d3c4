// Package seller is a local x402 seller and facilitator, for tests and the demo: a
// real HTTP server that answers 402 with v1 and v2 offers, has its facilitator verify
// a payment by recovering the signer and settle it into a ledger it shows, and
// misbehaves on demand (another payee, a changed price, no delivery, a used
// authorization refused). Nothing moves on a chain: the ledger is the chain, and
// /rpc answers for it what a node would (EIP-3009's authorizationState).
package seller

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/x402"
)

// Defaults: USDC on Base Sepolia, a cent a call.
const (
	DefaultNetwork = "eip155:84532"
	DefaultAsset   = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	DefaultPayTo   = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	DefaultPrice   = "10000"
	// DemoPayeeKey is the payee key the local seller command signs its manifest
	// with: anyone can read it here, so its signature proves ownership on this
	// machine and nowhere else.
	DemoPayeeKey = "011ddcf001bbd5d35d6996e635211a81581bfb6d68a77b72576858d3c532cfb3"
	// otherPayTo is whom the wrong_payee misbehaviour names instead.
	otherPayTo = "0x000000000000000000000000000000000000dEaD"
)

// Misbehaviours.
const (
	ModeNone         = "none"
	ModeWrongPayee   = "wrong_payee"   // offers name another payee from now on
	ModeChangedPrice = "changed_price" // offers ask twice the price from now on
	ModeNoDelivery   = "no_delivery"   // payments settle, and the answer is a 500 without content
	// ModeReplayRefused answers a payment settled before with 402, as the reference
	// middleware and facilitator do (the chain refuses a used nonce), instead of
	// delivering the answer again.
	ModeReplayRefused = "replay_refused"
)

var modes = []string{ModeNone, ModeWrongPayee, ModeChangedPrice, ModeNoDelivery, ModeReplayRefused}

// Config sets up a Seller. Zero fields take the defaults.
type Config struct {
	PayTo string
	// PayeeKey is the payee's private key (hex), when the seller has it: PayTo is
	// then its address (unless set), and the seller's discovery manifest carries
	// the payee's signature of the origin, its proof of ownership.
	PayeeKey string
	Network  string // CAIP-2
	Asset    string
	Price    string // atomic units
	// FacilitatorURL is where the seller verifies and settles payments; empty means
	// its own /facilitator, reached over HTTP at the address the request came to.
	FacilitatorURL string
	// Client calls the facilitator (default: a client with a 10 s timeout).
	Client *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Transfer is one settled payment in the ledger.
type Transfer struct {
	ID          int       `json:"id"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Value       string    `json:"value"`
	Asset       string    `json:"asset"`
	Network     string    `json:"network"`
	Nonce       string    `json:"nonce"`
	Transaction string    `json:"transaction"`
	Resource    string    `json:"resource"`
	SettledAt   time.Time `json:"settledAt"`
}

// Seller serves the paid routes, the facilitator, the ledger and the misbehaviour
// switch. It is safe for concurrent use.
type Seller struct {
	cfg Config
	mux *http.ServeMux

	mu        sync.Mutex
	mode      string
	transfers []Transfer
	delivered map[string][]byte             // answer body by payer|nonce, for redelivery
	settled   map[string]x402.Authorization // by payer|nonce
	// settledSVM holds the Solana transactions settled, by svmTransfer.key;
	// blockhashes the recent blockhashes /rpc handed out, which alone a transaction
	// may name.
	settledSVM  map[string]string
	blockhashes []string
	// The upto route's chain: the owners that approved Permit2, the Permit2 nonces
	// used (owner|nonce), each transaction's call data, and when the chain started.
	approved map[string]bool
	uptoUsed map[string]bool
	inputs   map[string][]byte
	start    time.Time
}

// New returns a seller with cfg's settings.
func New(cfg Config) *Seller {
	if cfg.PayTo == "" && cfg.PayeeKey != "" {
		if k, err := x402.ParseSigner(cfg.PayeeKey); err == nil {
			cfg.PayTo = k.Address()
		}
	}
	if cfg.PayTo == "" {
		cfg.PayTo = DefaultPayTo
	}
	if cfg.Network == "" {
		cfg.Network = DefaultNetwork
	}
	if cfg.Asset == "" {
		cfg.Asset = DefaultAsset
	}
	if cfg.Price == "" {
		cfg.Price = DefaultPrice
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Seller{cfg: cfg, mux: http.NewServeMux(), mode: ModeNone, delivered: map[string][]byte{}, settled: map[string]x402.Authorization{},
		settledSVM: map[string]string{}, approved: map[string]bool{}, uptoUsed: map[string]bool{}, inputs: map[string][]byte{}, start: cfg.Now()}
	s.mux.HandleFunc("GET /v1/weather", s.paid(1, "The weather for a city, today."))
	s.mux.HandleFunc("GET /v2/report", s.paid(2, "A short report on a topic."))
	s.mux.HandleFunc("POST /v2/report", s.paid(2, "A short report on a topic."))
	s.mux.HandleFunc("GET /v2/solana", s.paid(2, "A short report on a topic, paid on Solana."))
	s.mux.HandleFunc("GET /v2/metered", s.metered)
	s.mux.HandleFunc("POST /approve", s.handleApprove)
	s.mux.HandleFunc("POST /facilitator/verify", s.handleVerify)
	s.mux.HandleFunc("POST /facilitator/settle", s.handleSettle)
	s.mux.HandleFunc("GET /facilitator/supported", s.handleSupported)
	s.mux.HandleFunc("GET /ledger", s.handleLedger)
	s.mux.HandleFunc("DELETE /ledger", s.handleClearLedger)
	s.mux.HandleFunc("GET /misbehave", s.handleMode)
	s.mux.HandleFunc("POST /misbehave", s.handleSetMode)
	s.mux.HandleFunc("GET /discovery/resources", s.handleDiscovery)
	s.mux.HandleFunc("GET "+origin.WellKnownPath, s.handleManifest)
	s.mux.HandleFunc("POST /rpc", s.handleRPC)
	return s
}

func (s *Seller) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Ledger is a copy of the transfers settled so far.
func (s *Seller) Ledger() []Transfer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transfer(nil), s.transfers...)
}

// SetMode switches the misbehaviour.
func (s *Seller) SetMode(mode string) error {
	for _, m := range modes {
		if m == mode {
			s.mu.Lock()
			s.mode = mode
			s.mu.Unlock()
			return nil
		}
	}
	return fmt.Errorf("unknown mode %q: want one of %s", mode, strings.Join(modes, ", "))
}

func (s *Seller) currentMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// requirement is the accepts entry a route offers now, in its version's field names.
func (s *Seller) requirement(version int, resource, description string) map[string]any {
	payTo, price := s.cfg.PayTo, s.cfg.Price
	switch s.currentMode() {
	case ModeWrongPayee:
		payTo = otherPayTo
	case ModeChangedPrice:
		n, _ := new(big.Int).SetString(price, 10)
		price = n.Lsh(n, 1).String()
	}
	e := map[string]any{"scheme": x402.SchemeExact, "asset": s.cfg.Asset, "payTo": payTo, "maxTimeoutSeconds": 60,
		"extra": map[string]any{"name": "USDC", "version": "2"}}
	if version == 1 {
		e["network"], e["maxAmountRequired"] = v1Name(s.cfg.Network), price
		e["resource"], e["description"], e["mimeType"] = resource, description, "application/json"
	} else {
		e["network"], e["amount"] = s.cfg.Network, price
	}
	return e
}

// v1Name is the x402 v1 name of a CAIP-2 network, or the network itself.
func v1Name(network string) string {
	for _, name := range []string{"base-sepolia", "base", "ethereum", "polygon", "avalanche"} {
		if x402.NormalizeNetwork(name) == network {
			return name
		}
	}
	return network
}

// paid serves a paid route of x402 version v: 402 with the offer, or, with a
// payment the facilitator settles, the answer and the settlement header.
func (s *Seller) paid(v int, description string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		resource := "http://" + r.Host + r.URL.Path
		req := s.requirement(v, resource, description)
		if r.URL.Path == "/v2/solana" {
			req = s.svmRequirement()
		}
		pay, sent, err := x402.ReadPayment(r.Header)
		if !sent {
			s.offer(w, v, resource, description, req, "payment required")
			return
		}
		if err != nil {
			s.offer(w, v, resource, description, req, err.Error())
			return
		}
		settled, err := s.facilitate(r, pay, req, v)
		if err != nil {
			s.offer(w, v, resource, description, req, err.Error())
			return
		}
		name, value := settled.Header(v)
		w.Header().Set(name, value)
		if s.currentMode() == ModeNoDelivery {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		key, paid := nonceKey(pay.Payload.Authorization), pay.Payload.Authorization.Value
		if pay.Transaction != "" {
			key, paid = "svm|"+pay.Transaction, req["amount"].(string)
		}
		s.mu.Lock()
		body, again := s.delivered[key]
		if !again {
			body, _ = json.Marshal(map[string]any{"resource": r.URL.Path, "query": r.URL.Query(), "answer": answer(r),
				"paid": paid, "transaction": settled.Transaction})
			s.delivered[key] = body
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}
}

func answer(r *http.Request) string {
	if c := r.URL.Query().Get("city"); c != "" {
		return "Sunny in " + c + ", 21 °C."
	}
	if t := r.URL.Query().Get("topic"); t != "" {
		return "On " + t + ": all is well."
	}
	return "Thank you for paying."
}

// offer answers 402 with the route's offer: v1 in the body, v2 in PAYMENT-REQUIRED.
func (s *Seller) offer(w http.ResponseWriter, v int, resource, description string, req map[string]any, why string) {
	w.Header().Set("Content-Type", "application/json")
	if v == 1 {
		w.WriteHeader(http.StatusPaymentRequired)
		json.NewEncoder(w).Encode(map[string]any{"x402Version": 1, "error": why, "accepts": []any{req}})
		return
	}
	doc, _ := json.Marshal(map[string]any{"x402Version": 2, "error": why,
		"resource": map[string]any{"url": resource, "description": description, "mimeType": "application/json"},
		"accepts":  []any{req}})
	w.Header().Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString(doc))
	w.WriteHeader(http.StatusPaymentRequired)
	w.Write([]byte("{}"))
}

// facilitatorBody is what the seller sends its facilitator.
type facilitatorBody struct {
	Version      int             `json:"x402Version"`
	Payment      x402.Payment    `json:"paymentPayload"`
	Requirements json.RawMessage `json:"paymentRequirements"`
}

// facilitate has the facilitator verify and settle pay against req, over HTTP.
func (s *Seller) facilitate(r *http.Request, pay x402.Payment, req map[string]any, v int) (x402.Settlement, error) {
	base := s.cfg.FacilitatorURL
	if base == "" {
		base = "http://" + r.Host + "/facilitator"
	}
	raw, _ := json.Marshal(req)
	body, _ := json.Marshal(facilitatorBody{Version: v, Payment: pay, Requirements: raw})
	var verdict struct {
		IsValid       bool   `json:"isValid"`
		InvalidReason string `json:"invalidReason"`
	}
	if err := s.post(r, base+"/verify", body, &verdict); err != nil {
		return x402.Settlement{}, err
	}
	if !verdict.IsValid {
		return x402.Settlement{}, fmt.Errorf("payment refused: %s", verdict.InvalidReason)
	}
	var st x402.Settlement
	if err := s.post(r, base+"/settle", body, &st); err != nil {
		return st, err
	}
	if !st.Success {
		return st, fmt.Errorf("payment not settled: %s", st.ErrorReason)
	}
	return st, nil
}

func (s *Seller) post(r *http.Request, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("facilitator: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("facilitator answered %s", resp.Status)
	}
	return nil
}

// check verifies a payment against the requirement it pays, as a facilitator does:
// the version, scheme, network (v1) or accepted entry (v2), payee, amount, validity
// window, signer and nonce. settledTx is the transaction of the same payment settled
// before, if it was.
func (s *Seller) check(b facilitatorBody) (settledTx string, err error) {
	var e struct {
		Scheme            string          `json:"scheme"`
		Network           string          `json:"network"`
		Asset             string          `json:"asset"`
		PayTo             string          `json:"payTo"`
		Amount            string          `json:"amount"`
		MaxAmountRequired string          `json:"maxAmountRequired"`
		Extra             json.RawMessage `json:"extra"`
	}
	if err := json.Unmarshal(b.Requirements, &e); err != nil {
		return "", fmt.Errorf("invalid_requirements")
	}
	p, a := b.Payment, b.Payment.Payload.Authorization
	amount := e.Amount
	if b.Version == 1 {
		amount = e.MaxAmountRequired
	}
	now := s.cfg.Now().Unix()
	after, _ := new(big.Int).SetString(a.ValidAfter, 10)
	before, _ := new(big.Int).SetString(a.ValidBefore, 10)
	switch {
	case p.Version != b.Version:
		return "", fmt.Errorf("invalid_x402_version")
	case b.Version == 1 && (p.Scheme != e.Scheme || p.Network != e.Network):
		return "", fmt.Errorf("invalid_scheme_or_network")
	case b.Version == 2 && !sameJSON(p.Accepted, b.Requirements):
		return "", fmt.Errorf("accepted_requirements_mismatch")
	case !strings.EqualFold(a.To, e.PayTo):
		return "", fmt.Errorf("invalid_exact_evm_payload_recipient_mismatch")
	case a.Value != amount:
		return "", fmt.Errorf("invalid_exact_evm_payload_authorization_value")
	case after == nil || before == nil || after.Int64() >= now || before.Int64() <= now:
		return "", fmt.Errorf("invalid_exact_evm_payload_authorization_valid_window")
	}
	d, err := x402.DomainOf(x402.Offer{Scheme: e.Scheme, Network: x402.NormalizeNetwork(e.Network), Asset: e.Asset, Extra: e.Extra})
	if err != nil {
		return "", fmt.Errorf("unsupported_scheme")
	}
	signer, err := x402.Recover(d, p.Payload)
	if err != nil || !strings.EqualFold(signer, a.From) {
		return "", fmt.Errorf("invalid_exact_evm_payload_signature")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.settled[nonceKey(a)]; ok {
		if prev != a || s.mode == ModeReplayRefused {
			return "", fmt.Errorf("invalid_exact_evm_payload_authorization_nonce_used")
		}
		for _, t := range s.transfers {
			if nonceKey(a) == strings.ToLower(t.From)+"|"+t.Nonce {
				return t.Transaction, nil // the same payment, settled once already
			}
		}
	}
	return "", nil
}

func nonceKey(a x402.Authorization) string { return strings.ToLower(a.From + "|" + a.Nonce) }

// sameJSON reports whether two JSON documents hold the same value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func (s *Seller) readBody(w http.ResponseWriter, r *http.Request) (facilitatorBody, bool) {
	var b facilitatorBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "the body is not a facilitator request"})
		return b, false
	}
	return b, true
}

func (s *Seller) handleVerify(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBody(w, r)
	if !ok {
		return
	}
	if isSVM(b) {
		t, err := s.checkSVM(b)
		if err == nil && s.svmSettledBefore(t.key) && s.currentMode() == ModeReplayRefused {
			err = fmt.Errorf("duplicate_settlement")
		}
		if err != nil {
			writeJSON(w, http.StatusOK, map[string]any{"isValid": false, "invalidReason": err.Error(), "payer": t.from})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"isValid": true, "payer": t.from})
		return
	}
	payer := b.Payment.Payload.Authorization.From
	if _, err := s.check(b); err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"isValid": false, "invalidReason": err.Error(), "payer": payer})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"isValid": true, "payer": payer})
}

func (s *Seller) handleSettle(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBody(w, r)
	if !ok {
		return
	}
	if isSVM(b) {
		t, err := s.checkSVM(b)
		var st x402.Settlement
		if err == nil {
			st, err = s.settleSVM(b, t)
		}
		if err != nil {
			writeJSON(w, http.StatusOK, x402.Settlement{Success: false, ErrorReason: err.Error(), Network: DefaultSolanaNetwork, Payer: t.from})
			return
		}
		writeJSON(w, http.StatusOK, st)
		return
	}
	a := b.Payment.Payload.Authorization
	network := x402.NormalizeNetwork(s.cfg.Network)
	tx, err := s.check(b)
	if err != nil {
		writeJSON(w, http.StatusOK, x402.Settlement{Success: false, ErrorReason: err.Error(), Network: network, Payer: a.From})
		return
	}
	if tx == "" {
		sum := sha256.Sum256([]byte(strings.ToLower(a.From) + "|" + a.Nonce))
		tx = "0x" + hex.EncodeToString(sum[:])
		s.mu.Lock()
		// Checked again under the lock: two settlements of one nonce make one transfer.
		if _, dup := s.settled[nonceKey(a)]; !dup {
			s.settled[nonceKey(a)] = a
			var e struct {
				Asset    string `json:"asset"`
				Resource string `json:"resource"` // v1
			}
			json.Unmarshal(b.Requirements, &e)
			var res struct {
				URL string `json:"url"` // v2
			}
			json.Unmarshal(b.Payment.Resource, &res)
			s.transfers = append(s.transfers, Transfer{ID: len(s.transfers) + 1, From: a.From, To: a.To, Value: a.Value,
				Asset: e.Asset, Network: network, Nonce: a.Nonce, Transaction: tx, Resource: cmp.Or(e.Resource, res.URL),
				SettledAt: s.cfg.Now().UTC()})
		}
		s.mu.Unlock()
	}
	writeJSON(w, http.StatusOK, x402.Settlement{Success: true, Transaction: tx, Network: network, Payer: a.From})
}

func (s *Seller) handleSupported(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"kinds": []any{
		map[string]any{"x402Version": 1, "scheme": "exact", "network": v1Name(s.cfg.Network)},
		map[string]any{"x402Version": 2, "scheme": "exact", "network": s.cfg.Network},
		map[string]any{"x402Version": 2, "scheme": "exact", "network": DefaultSolanaNetwork, "extra": map[string]any{"feePayer": FeePayer()}},
	}})
}

func (s *Seller) handleLedger(w http.ResponseWriter, r *http.Request) {
	ts := s.Ledger()
	total := new(big.Int)
	for _, t := range ts {
		if n, ok := new(big.Int).SetString(t.Value, 10); ok {
			total.Add(total, n)
		}
	}
	if ts == nil {
		ts = []Transfer{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"transfers": ts, "total": total.String()})
}

func (s *Seller) handleClearLedger(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.transfers, s.delivered, s.settled, s.settledSVM = nil, map[string][]byte{}, map[string]x402.Authorization{}, map[string]string{}
	s.uptoUsed, s.inputs = map[string]bool{}, map[string][]byte{}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// handleRPC answers the JSON-RPC call a node answers for the ledger: eth_call of
// authorizationState(from, nonce) on the seller's asset, true once the ledger holds a
// transfer with that nonce. Other calls get JSON-RPC's method-not-found.
func (s *Seller) handleRPC(w http.ResponseWriter, r *http.Request) {
	var call struct {
		ID     json.RawMessage   `json:"id"`
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&call); err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "parse error"}})
		return
	}
	fail := func(code int, msg string) {
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": call.ID, "error": map[string]any{"code": code, "message": msg}})
	}
	if call.Method == "getLatestBlockhash" {
		// Solana's: the blockhash payments on the Solana route are signed with, a
		// new one each time, as the chain moves on.
		h := s.nextBlockhash()
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": call.ID, "result": map[string]any{
			"context": map[string]any{"slot": 1}, "value": map[string]any{"blockhash": h, "lastValidBlockHeight": 151}}})
		return
	}
	if result, ok, err := s.chainRead(call.Method, call.Params); ok {
		if err != nil {
			fail(-32602, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": call.ID, "result": result})
		return
	}
	if call.Method != "eth_call" {
		fail(-32601, "the method "+call.Method+" does not exist")
		return
	}
	var msg struct {
		To    string `json:"to"`
		Input string `json:"input"`
		Data  string `json:"data"`
	}
	if len(call.Params) == 0 || json.Unmarshal(call.Params[0], &msg) != nil {
		fail(-32602, "invalid params")
		return
	}
	data, err := hex.DecodeString(strings.TrimPrefix(cmp.Or(msg.Input, msg.Data), "0x"))
	if word, ok := s.permit2Call(msg.To, data); err == nil && ok {
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": call.ID, "result": "0x" + hex.EncodeToString(word)})
		return
	}
	from, nonce, ok := x402.DecodeAuthorizationState(data)
	if err != nil || !ok || !strings.EqualFold(msg.To, s.cfg.Asset) {
		fail(3, "execution reverted")
		return
	}
	s.mu.Lock()
	_, used := s.settled[strings.ToLower(from)+"|0x"+hex.EncodeToString(nonce)]
	s.mu.Unlock()
	word := make([]byte, 32)
	if used {
		word[31] = 1
	}
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": call.ID, "result": "0x" + hex.EncodeToString(word)})
}

func (s *Seller) handleMode(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"mode": s.currentMode(), "modes": modes})
}

func (s *Seller) handleSetMode(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Mode string `json:"mode"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"mode": "..."}`})
		return
	}
	if err := s.SetMode(b.Mode); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	s.handleMode(w, r)
}

// Listing is the seller's paid routes under base (http://host:port) as x402 Bazaar
// discovery items, which the directory's importer reads.
func (s *Seller) Listing(base string) []map[string]any {
	now := s.cfg.Now().UTC().Format(time.RFC3339)
	return []map[string]any{
		{"resource": base + "/v1/weather", "type": "http", "x402Version": 1, "lastUpdated": now, "serviceName": "Local demo seller",
			"description": "Local demo seller: the weather for a city, today.",
			"accepts":     []any{s.requirement(1, base+"/v1/weather", "The weather for a city, today.")}, "metadata": map[string]any{}},
		{"resource": base + "/v2/report", "type": "http", "x402Version": 2, "lastUpdated": now, "serviceName": "Local demo seller",
			"description": "Local demo seller: a short report on a topic.",
			"accepts":     []any{s.requirement(2, base+"/v2/report", "")}, "metadata": map[string]any{}},
		{"resource": base + "/v2/solana", "type": "http", "x402Version": 2, "lastUpdated": now, "serviceName": "Local demo seller",
			"description": "Local demo seller: a short report on a topic, paid on Solana.",
			"accepts":     []any{s.svmRequirement()}, "metadata": map[string]any{}},
	}
}

// handleDiscovery lists the paid routes as an x402 Bazaar discovery endpoint does,
// so the directory's importer can list this seller.
func (s *Seller) handleDiscovery(w http.ResponseWriter, r *http.Request) {
	items := s.Listing("http://" + r.Host)
	writeJSON(w, http.StatusOK, map[string]any{"x402Version": 1, "items": items,
		"pagination": map[string]any{"limit": 100, "offset": 0, "total": len(items)}})
}

// Manifest is the seller's own discovery manifest at base (http://host:port), as
// served at /.well-known/x402.json: its paid routes, each with its offer, and, when
// the seller has its payee's key, the payee's signature of the origin.
func (s *Seller) Manifest(base string) map[string]any {
	item := func(path, description string) map[string]any {
		return map[string]any{
			"resource": map[string]any{"url": base + path, "description": "Local demo seller: " + description,
				"mimeType": "application/json", "serviceName": "Local demo seller"},
			"type":    "http",
			"accepts": []any{s.requirement(2, base+path, "")},
			"input":   map[string]any{"method": "GET"},
			"output":  map[string]any{"mimeType": "application/json"},
		}
	}
	m := map[string]any{"x402Version": 2, "lastUpdated": s.cfg.Now().Unix(), "items": []any{
		item("/v1/weather", "the weather for a city, today."),
		item("/v2/report", "a short report on a topic."),
	}}
	if s.cfg.PayeeKey != "" {
		if sig, err := origin.SignOrigin(base, s.cfg.PayeeKey); err == nil {
			m["ownershipProofs"] = []string{sig}
		}
	}
	return m
}

// handleManifest serves the manifest for the origin the request came to, with an
// ETag that answers If-None-Match.
func (s *Seller) handleManifest(w http.ResponseWriter, r *http.Request) {
	m := s.Manifest("http://" + r.Host)
	delete(m, "lastUpdated") // the same routes make the same manifest, and the same ETag
	body, _ := json.Marshal(m)
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
