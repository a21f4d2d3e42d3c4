package seller

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/waystation/waystation/internal/x402"
)

// The local seller's metered route, GET /v2/metered, charges by x402's upto scheme on
// EVM: up to UptoMaximum, settling what the call used (the query's use, in atomic
// units; 3000 when none). Its facilitator, UptoFacilitator, runs in-process and
// checks what Permit2 and x402's upto proxy check on chain (the token, the spender,
// the payee, the facilitator, the window, the payer's signature over Permit2's
// domain, its allowance to Permit2, an unused nonce, at most the permitted amount)
// before it settles into the ledger. POST /approve?owner=0x... stands for the
// owner's one-time approve of Permit2 on the token.
const (
	UptoMaximum     = "50000"
	UptoFacilitator = "0x1111111111111111111111111111111111111111"
	uptoDefaultUse  = "3000"
)

// firstBlock is the block the ledger's chain stands at before its first transfer;
// each transfer is mined in a block of its own, the next, at its settling time, and
// the blocks before are two seconds apart, the first mined as the seller starts.
const firstBlock = 1_000_000

func (s *Seller) uptoRequirement() map[string]any {
	return map[string]any{"scheme": x402.SchemeUpto, "network": s.cfg.Network, "asset": s.cfg.Asset, "amount": UptoMaximum,
		"payTo": s.cfg.PayTo, "maxTimeoutSeconds": 60, "extra": map[string]any{"name": "USDC", "version": "2",
			"assetTransferMethod": "permit2", "facilitatorAddress": UptoFacilitator}}
}

// metered serves GET /v2/metered: 402 with the upto offer, or, with a payment its
// facilitator settles, the answer and a settlement answer naming what moved.
func (s *Seller) metered(w http.ResponseWriter, r *http.Request) {
	const description = "A report charged by what it used."
	resource := "http://" + r.Host + r.URL.Path
	req := s.uptoRequirement()
	header := r.Header.Get(x402.HeaderPaymentV2)
	if header == "" {
		s.offer(w, 2, resource, description, req, "payment required")
		return
	}
	use := cmp.Or(r.URL.Query().Get("use"), uptoDefaultUse)
	st, err := s.settleUpto(header, req, use, resource)
	if err != nil {
		s.offer(w, 2, resource, description, req, err.Error())
		return
	}
	name, value := st.Header(2)
	w.Header().Set(name, value)
	if s.currentMode() == ModeNoDelivery {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"resource": r.URL.Path, "answer": answer(r), "paid": st.Amount,
		"maximum": UptoMaximum, "transaction": st.Transaction})
}

// settleUpto checks the upto payment in header against req, as the proxy and
// Permit2 would, and settles use of it for resource into the ledger.
func (s *Seller) settleUpto(header string, req map[string]any, use, resource string) (x402.Settlement, error) {
	doc, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return x402.Settlement{}, fmt.Errorf("invalid_payload")
	}
	var p struct {
		Version  int             `json:"x402Version"`
		Accepted json.RawMessage `json:"accepted"`
		Payload  x402.UptoPayload
	}
	if json.Unmarshal(doc, &p) != nil || p.Version != 2 {
		return x402.Settlement{}, fmt.Errorf("invalid_payload")
	}
	raw, _ := json.Marshal(req)
	a := p.Payload.Permit2Authorization
	now := s.cfg.Now().Unix()
	deadline, _ := strconv.ParseInt(a.Deadline, 10, 64)
	after, _ := strconv.ParseInt(a.Witness.ValidAfter, 10, 64)
	amount, okAmount := new(big.Int).SetString(use, 10)
	nonce, okNonce := new(big.Int).SetString(a.Nonce, 10)
	maximum, _ := new(big.Int).SetString(UptoMaximum, 10)
	switch {
	case !sameJSON(p.Accepted, raw):
		return x402.Settlement{}, fmt.Errorf("accepted_requirements_mismatch")
	case !strings.EqualFold(a.Permitted.Token, s.cfg.Asset) || a.Permitted.Amount != UptoMaximum:
		return x402.Settlement{}, fmt.Errorf("invalid_upto_evm_payload_permitted")
	case !strings.EqualFold(a.Spender, x402.UptoProxyAddress) || !strings.EqualFold(a.Witness.To, s.cfg.PayTo) ||
		!strings.EqualFold(a.Witness.Facilitator, UptoFacilitator):
		return x402.Settlement{}, fmt.Errorf("invalid_upto_evm_payload_witness")
	case now < after || now > deadline:
		return x402.Settlement{}, fmt.Errorf("invalid_upto_evm_payload_window")
	case !okAmount || amount.Sign() < 0 || !okNonce || amount.Cmp(maximum) > 0:
		return x402.Settlement{}, fmt.Errorf("AmountExceedsPermitted")
	}
	chain, _ := new(big.Int).SetString(strings.TrimPrefix(x402.NormalizeNetwork(s.cfg.Network), "eip155:"), 10)
	digest, err := x402.UptoDigest(chain, a)
	sig := common.FromHex(p.Payload.Signature)
	if err != nil || len(sig) != 65 {
		return x402.Settlement{}, fmt.Errorf("InvalidSigner")
	}
	sig = append([]byte(nil), sig...)
	if sig[64] >= 27 {
		sig[64] -= 27
	}
	pub, err := crypto.SigToPub(digest, sig)
	if err != nil || crypto.PubkeyToAddress(*pub) != common.HexToAddress(a.From) {
		return x402.Settlement{}, fmt.Errorf("InvalidSigner")
	}
	owner := common.HexToAddress(a.From).Hex()
	network := x402.NormalizeNetwork(s.cfg.Network)
	s.mu.Lock()
	defer s.mu.Unlock()
	key := owner + "|" + nonce.String()
	switch {
	case s.uptoUsed[key]:
		return x402.Settlement{}, fmt.Errorf("InvalidNonce")
	case !s.approved[owner]:
		return x402.Settlement{}, fmt.Errorf("permit2_allowance_required")
	}
	s.uptoUsed[key] = true
	input, _ := uptoProxyABI.Pack("settle", permitOf(a), amount, common.HexToAddress(a.From), witnessOf(a), common.FromHex(p.Payload.Signature))
	id := len(s.transfers) + 1
	sum := crypto.Keccak256(append([]byte(key), byte(id)))
	tx := "0x" + hex.EncodeToString(sum)
	s.inputs[tx] = input
	s.transfers = append(s.transfers, Transfer{ID: id, From: owner, To: common.HexToAddress(s.cfg.PayTo).Hex(), Value: amount.String(),
		Asset: s.cfg.Asset, Network: network, Nonce: nonce.String(), Transaction: tx, Resource: resource,
		SettledAt: s.cfg.Now().UTC()})
	return x402.Settlement{Success: true, Transaction: tx, Network: network, Payer: owner, Amount: amount.String()}, nil
}

// handleApprove stands for the owner's approve(Permit2, max) on the token.
func (s *Seller) handleApprove(w http.ResponseWriter, r *http.Request) {
	owner := r.URL.Query().Get("owner")
	if !common.IsHexAddress(owner) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "owner must be an address"})
		return
	}
	s.mu.Lock()
	s.approved[common.HexToAddress(owner).Hex()] = true
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// The calls of Permit2's state the service makes, as a node answers them.
var (
	allowanceSelector   = crypto.Keccak256([]byte("allowance(address,address)"))[:4]
	nonceBitmapSelector = crypto.Keccak256([]byte("nonceBitmap(address,uint256)"))[:4]
	transferTopic       = common.BytesToHash(crypto.Keccak256([]byte("Transfer(address,address,uint256)")))
)

// permit2Call answers an eth_call of the token's allowance to Permit2 or of
// Permit2's nonce bitmap; ok false for any other call.
func (s *Seller) permit2Call(to string, data []byte) (word []byte, ok bool) {
	word = make([]byte, 32)
	if len(data) != 4+64 {
		return nil, false
	}
	arg0, arg1 := common.BytesToAddress(data[4:36]).Hex(), data[36:68]
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case strings.EqualFold(to, s.cfg.Asset) && string(data[:4]) == string(allowanceSelector):
		if s.approved[arg0] && common.BytesToAddress(arg1) == common.HexToAddress(x402.Permit2Address) {
			for i := range word {
				word[i] = 0xff
			}
		}
		return word, true
	case strings.EqualFold(to, x402.Permit2Address) && string(data[:4]) == string(nonceBitmapSelector):
		bits, wordPos := new(big.Int), new(big.Int).SetBytes(arg1)
		for key := range s.uptoUsed {
			o, n, _ := strings.Cut(key, "|")
			nonce, _ := new(big.Int).SetString(n, 10)
			if o == arg0 && new(big.Int).Rsh(nonce, 8).Cmp(wordPos) == 0 {
				bits.SetBit(bits, int(nonce.Uint64()&0xff), 1)
			}
		}
		return bits.FillBytes(word), true
	}
	return nil, false
}

// chainRead answers the reads of blocks, transactions, receipts and logs a node
// answers, for the ledger's chain: each transfer a transaction of its own block,
// whose receipt carries the token's Transfer log. ok false for another method.
func (s *Seller) chainRead(method string, params []json.RawMessage) (result any, ok bool, err error) {
	str := func(i int) string {
		var v string
		if i < len(params) {
			json.Unmarshal(params[i], &v)
		}
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := uint64(firstBlock + len(s.transfers))
	byHash := func(h string) (Transfer, uint64, bool) {
		for i, t := range s.transfers {
			if strings.EqualFold(t.Transaction, h) {
				return t, uint64(firstBlock + i + 1), true
			}
		}
		return Transfer{}, 0, false
	}
	switch method {
	case "eth_blockNumber":
		return hexQ(latest), true, nil
	case "eth_getBlockByNumber":
		n := latest
		if tag := str(0); tag != "latest" {
			n, err = strconv.ParseUint(strings.TrimPrefix(tag, "0x"), 16, 64)
			if err != nil {
				return nil, true, fmt.Errorf("invalid block number")
			}
		}
		if n > latest {
			return nil, true, nil
		}
		ts := s.start.Unix() - 2*(firstBlock-int64(min(n, firstBlock)))
		if n > firstBlock {
			ts = s.transfers[n-firstBlock-1].SettledAt.Unix()
		}
		return map[string]any{"number": hexQ(n), "timestamp": hexQ(uint64(ts)), "transactions": []any{}}, true, nil
	case "eth_getTransactionByHash":
		t, n, found := byHash(str(0))
		if !found {
			return nil, true, nil
		}
		return map[string]any{"hash": t.Transaction, "from": UptoFacilitator, "to": x402.UptoProxyAddress, "blockNumber": hexQ(n),
			"input": "0x" + hex.EncodeToString(s.inputs[t.Transaction]), "value": "0x0"}, true, nil
	case "eth_getTransactionReceipt":
		t, n, found := byHash(str(0))
		if !found {
			return nil, true, nil
		}
		return map[string]any{"transactionHash": t.Transaction, "blockNumber": hexQ(n), "status": "0x1",
			"logs": []any{transferLog(t, n)}}, true, nil
	case "eth_getLogs":
		var f struct {
			Address   string   `json:"address"`
			FromBlock string   `json:"fromBlock"`
			ToBlock   string   `json:"toBlock"`
			Topics    []string `json:"topics"`
		}
		if len(params) == 0 || json.Unmarshal(params[0], &f) != nil {
			return nil, true, fmt.Errorf("invalid params")
		}
		from, _ := strconv.ParseUint(strings.TrimPrefix(f.FromBlock, "0x"), 16, 64)
		to, err := strconv.ParseUint(strings.TrimPrefix(f.ToBlock, "0x"), 16, 64)
		if err != nil {
			to = latest
		}
		if to >= from+10_000 {
			return nil, true, fmt.Errorf("query exceeds the 10000 blocks this node answers")
		}
		logs := []any{}
		for i, t := range s.transfers {
			n := uint64(firstBlock + i + 1)
			l := transferLog(t, n)
			if n < from || n > to || (f.Address != "" && !strings.EqualFold(f.Address, t.Asset)) {
				continue
			}
			match := true
			for j, topic := range f.Topics {
				match = match && (topic == "" || strings.EqualFold(topic, l["topics"].([]string)[j]))
			}
			if match {
				logs = append(logs, l)
			}
		}
		return logs, true, nil
	}
	return nil, false, nil
}

// transferLog is the token's Transfer log of t, mined in block n.
func transferLog(t Transfer, n uint64) map[string]any {
	v, _ := new(big.Int).SetString(t.Value, 10)
	return map[string]any{"address": strings.ToLower(t.Asset), "blockNumber": hexQ(n), "transactionHash": t.Transaction,
		"logIndex": "0x0", "transactionIndex": "0x0", "removed": false,
		"topics": []string{transferTopic.Hex(), common.BytesToHash(common.HexToAddress(t.From).Bytes()).Hex(),
			common.BytesToHash(common.HexToAddress(t.To).Bytes()).Hex()},
		"data": "0x" + hex.EncodeToString(common.LeftPadBytes(v.Bytes(), 32))}
}

func hexQ(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

// uptoProxyABI is x402's upto proxy's settle, as @x402/evm's ABI has it: what a
// settlement transaction's call data encodes.
var uptoProxyABI = func() abi.ABI {
	a, err := abi.JSON(strings.NewReader(`[{"type":"function","name":"settle","stateMutability":"nonpayable","outputs":[],"inputs":[
		{"name":"permit","type":"tuple","components":[
			{"name":"permitted","type":"tuple","components":[{"name":"token","type":"address"},{"name":"amount","type":"uint256"}]},
			{"name":"nonce","type":"uint256"},{"name":"deadline","type":"uint256"}]},
		{"name":"amount","type":"uint256"},{"name":"owner","type":"address"},
		{"name":"witness","type":"tuple","components":[
			{"name":"to","type":"address"},{"name":"facilitator","type":"address"},{"name":"validAfter","type":"uint256"}]},
		{"name":"signature","type":"bytes"}]}]`))
	if err != nil {
		panic(err)
	}
	return a
}()

type tokenPermissions struct {
	Token  common.Address
	Amount *big.Int
}

type permitTransferFrom struct {
	Permitted tokenPermissions
	Nonce     *big.Int
	Deadline  *big.Int
}

type uptoWitness struct {
	To          common.Address
	Facilitator common.Address
	ValidAfter  *big.Int
}

func permitOf(a x402.UptoAuthorization) permitTransferFrom {
	n := func(s string) *big.Int { v, _ := new(big.Int).SetString(s, 10); return cmp.Or(v, new(big.Int)) }
	return permitTransferFrom{Permitted: tokenPermissions{Token: common.HexToAddress(a.Permitted.Token), Amount: n(a.Permitted.Amount)},
		Nonce: n(a.Nonce), Deadline: n(a.Deadline)}
}

func witnessOf(a x402.UptoAuthorization) uptoWitness {
	v, _ := new(big.Int).SetString(a.Witness.ValidAfter, 10)
	if v == nil {
		v = new(big.Int)
	}
	return uptoWitness{To: common.HexToAddress(a.Witness.To), Facilitator: common.HexToAddress(a.Witness.Facilitator), ValidAfter: v}
}
