package seller

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"
	"github.com/gagliardetto/solana-go/programs/token"

	"github.com/waystation/waystation/internal/x402"
)

// The Solana route's defaults: USDC on Solana's devnet, paid to a fixed key, the fees
// paid by the facilitator's own key (derived from a fixed seed: the seller holds no
// secret worth keeping).
const (
	DefaultSolanaNetwork = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
	DefaultSolanaAsset   = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"
	DefaultSolanaPayTo   = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4"
	// DefaultSolanaBlockhash is the first recent blockhash /rpc's getLatestBlockhash
	// answers; each later call answers another.
	DefaultSolanaBlockhash = "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N"
)

// feePayerKey is the facilitator's fee payer.
var feePayerKey = solana.PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x5e}, 32)))

// FeePayer is the public key the Solana route's offers name as extra.feePayer.
func FeePayer() string { return feePayerKey.PublicKey().String() }

// svmRequirement is the Solana route's accepts entry, in v2's names.
func (s *Seller) svmRequirement() map[string]any {
	payTo, price := DefaultSolanaPayTo, s.cfg.Price
	switch s.currentMode() {
	case ModeWrongPayee:
		payTo = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	case ModeChangedPrice:
		n, _ := strconv.ParseUint(price, 10, 64)
		price = strconv.FormatUint(2*n, 10)
	}
	return map[string]any{"scheme": x402.SchemeExact, "network": DefaultSolanaNetwork, "asset": DefaultSolanaAsset,
		"payTo": payTo, "amount": price, "maxTimeoutSeconds": 60, "extra": map[string]any{"feePayer": FeePayer()}}
}

// svmTransfer is a verified Solana payment: who pays whom how much, its memo and the
// transaction's key (the payer's signature, which only the same transaction carries).
type svmTransfer struct {
	from, to, value, memo string
	key                   string
	tx                    *solana.Transaction
}

// svmEntry is the accepted entry of a Solana payment, in v2's names.
type svmEntry struct {
	Scheme  string `json:"scheme"`
	Network string `json:"network"`
	Asset   string `json:"asset"`
	PayTo   string `json:"payTo"`
	Amount  string `json:"amount"`
	Extra   struct {
		FeePayer string `json:"feePayer"`
		Memo     string `json:"memo"`
	} `json:"extra"`
}

// svmMessage is a decoded Solana transaction with each instruction's program and
// accounts resolved once, for the checks that follow.
type svmMessage struct {
	tx       *solana.Transaction
	programs []solana.PublicKey
	accounts [][]*solana.AccountMeta
}

// instruction is the i-th instruction's raw form.
func (m svmMessage) instruction(i int) solana.CompiledInstruction {
	return m.tx.Message.Instructions[i]
}

// checkSVM verifies a Solana payment as x402's reference facilitator does
// (scheme_exact_svm.md): the accepted entry, 3 to 6 instructions in order (compute
// unit limit, price at most 5 lamports, TransferChecked of the mint to the payee's
// associated token account for the exact amount; then memo or Lighthouse only), the
// fee payer in no instruction's accounts, the memo when the offer named one, and the
// payer's signature. The checks run in the reference's order, so that a payment wrong
// in several ways is refused for the same reason.
func (s *Seller) checkSVM(b facilitatorBody) (svmTransfer, error) {
	e, err := svmAccepted(b)
	if err != nil {
		return svmTransfer{}, err
	}
	m, err := decodeSVMMessage(b.Payment.Transaction)
	if err != nil {
		return svmTransfer{}, err
	}
	if err := m.checkComputeBudget(); err != nil {
		return svmTransfer{}, err
	}
	owner, err := m.checkTransfer(e)
	if err != nil {
		return svmTransfer{}, err
	}
	if !s.knownBlockhash(m.tx.Message.RecentBlockhash.String()) {
		return svmTransfer{}, fmt.Errorf("invalid_exact_svm_payload_transaction_blockhash_not_found")
	}
	memo, err := m.memo(e.Extra.Memo)
	if err != nil {
		return svmTransfer{}, err
	}
	msg, err := m.checkSignatures()
	if err != nil {
		return svmTransfer{}, err
	}
	sum := sha256.Sum256(msg)
	return svmTransfer{from: owner.String(), to: e.PayTo, value: e.Amount, memo: memo, key: "svm|" + string(sum[:]), tx: m.tx}, nil
}

// svmAccepted is the requirement b pays, refused unless the payment accepted it as
// offered and its fee payer is the facilitator's own.
func svmAccepted(b facilitatorBody) (svmEntry, error) {
	var e svmEntry
	if err := json.Unmarshal(b.Requirements, &e); err != nil {
		return e, fmt.Errorf("invalid_requirements")
	}
	if b.Payment.Version != 2 || !sameJSON(b.Payment.Accepted, b.Requirements) {
		return e, fmt.Errorf("accepted_requirements_mismatch")
	}
	if e.Extra.FeePayer != FeePayer() {
		return e, fmt.Errorf("fee_payer_not_managed_by_facilitator")
	}
	return e, nil
}

// decodeSVMMessage decodes a base64 transaction of 3 to 6 instructions whose fee payer
// is the facilitator's key and appears in no instruction's accounts: a fee payer
// named there could be made to pay more than the fee.
func decodeSVMMessage(raw string) (svmMessage, error) {
	tx, err := solana.TransactionFromBase64(raw)
	if err != nil {
		return svmMessage{}, fmt.Errorf("invalid_exact_svm_payload_transaction_could_not_be_decoded")
	}
	m := &tx.Message
	feePayer := feePayerKey.PublicKey()
	if n := len(m.Instructions); n < 3 || n > 6 {
		return svmMessage{}, fmt.Errorf("invalid_exact_svm_payload_transaction_instructions_length")
	}
	if len(m.AccountKeys) == 0 || !m.AccountKeys[0].Equals(feePayer) {
		return svmMessage{}, fmt.Errorf("invalid_exact_svm_payload_transaction_fee_payer")
	}
	out := svmMessage{tx: tx, programs: make([]solana.PublicKey, len(m.Instructions)), accounts: make([][]*solana.AccountMeta, len(m.Instructions))}
	for i, ix := range m.Instructions {
		if out.programs[i], err = tx.ResolveProgramIDIndex(ix.ProgramIDIndex); err != nil {
			return svmMessage{}, fmt.Errorf("invalid_exact_svm_payload_transaction_could_not_be_decoded")
		}
		if out.accounts[i], err = ix.ResolveInstructionAccounts(m); err != nil {
			return svmMessage{}, fmt.Errorf("invalid_exact_svm_payload_transaction_could_not_be_decoded")
		}
		if slices.ContainsFunc(out.accounts[i], func(a *solana.AccountMeta) bool { return a.PublicKey.Equals(feePayer) }) {
			return svmMessage{}, fmt.Errorf("invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts")
		}
	}
	return out, nil
}

// checkComputeBudget requires the first two instructions to set the compute unit limit
// and a price of at most x402.SVMMaxComputeUnitPrice, which bounds the fee the
// facilitator pays.
func (m svmMessage) checkComputeBudget() error {
	limit, err1 := computebudget.DecodeInstruction(m.accounts[0], m.instruction(0).Data)
	price, err2 := computebudget.DecodeInstruction(m.accounts[1], m.instruction(1).Data)
	if err1 != nil || err2 != nil || !m.programs[0].Equals(solana.ComputeBudget) || !m.programs[1].Equals(solana.ComputeBudget) {
		return fmt.Errorf("invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction")
	}
	if _, ok := limit.Impl.(*computebudget.SetComputeUnitLimit); !ok {
		return fmt.Errorf("invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction")
	}
	if p, ok := price.Impl.(*computebudget.SetComputeUnitPrice); !ok || p.MicroLamports > x402.SVMMaxComputeUnitPrice {
		return fmt.Errorf("invalid_exact_svm_payload_transaction_instructions_compute_price_instruction")
	}
	return nil
}

// checkTransfer requires the third instruction to be a TransferChecked of e's asset
// to the payee's associated token account for e's exact amount, and answers the
// paying owner.
func (m svmMessage) checkTransfer(e svmEntry) (solana.PublicKey, error) {
	ix, err := token.DecodeInstruction(m.accounts[2], m.instruction(2).Data)
	if err != nil || !m.programs[2].Equals(solana.TokenProgramID) {
		return solana.PublicKey{}, fmt.Errorf("invalid_exact_svm_payload_no_transfer_instruction")
	}
	tc, ok := ix.Impl.(*token.TransferChecked)
	if !ok {
		return solana.PublicKey{}, fmt.Errorf("invalid_exact_svm_payload_no_transfer_instruction")
	}
	mint, owner := tc.GetMintAccount().PublicKey, tc.GetOwnerAccount().PublicKey
	payTo, err1 := solana.PublicKeyFromBase58(e.PayTo)
	asset, err2 := solana.PublicKeyFromBase58(e.Asset)
	if err1 != nil || err2 != nil || !mint.Equals(asset) {
		return solana.PublicKey{}, fmt.Errorf("invalid_exact_svm_payload_mint_mismatch")
	}
	if want, _, err := solana.FindAssociatedTokenAddress(payTo, mint); err != nil || !tc.GetDestinationAccount().PublicKey.Equals(want) {
		return solana.PublicKey{}, fmt.Errorf("invalid_exact_svm_payload_recipient_mismatch")
	}
	if strconv.FormatUint(*tc.Amount, 10) != e.Amount {
		return solana.PublicKey{}, fmt.Errorf("invalid_exact_svm_payload_amount_mismatch")
	}
	return owner, nil
}

// lighthouseProgram is Lighthouse's program, which wallets add to guard a transaction.
const lighthouseProgram = "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95"

// memo is the transaction's memo, refused when an instruction after the transfer is
// neither a memo nor Lighthouse, or when the offer named a memo (want) that the
// transaction does not carry exactly once.
func (m svmMessage) memo(want string) (string, error) {
	memo, memos := "", 0
	for i := 3; i < len(m.programs); i++ {
		switch m.programs[i].String() {
		case solana.MemoProgramID.String():
			memo, memos = string(m.instruction(i).Data), memos+1
		case lighthouseProgram:
		default:
			return "", fmt.Errorf("invalid_exact_svm_payload_unknown_optional_instruction")
		}
	}
	if want != "" && (memos != 1 || memo != want) {
		return "", fmt.Errorf("invalid_exact_svm_payload_memo_mismatch")
	}
	return memo, nil
}

// checkSignatures requires every signature but the fee payer's to be there and to
// verify, and answers the signed message.
func (m svmMessage) checkSignatures() ([]byte, error) {
	msg, err := m.tx.Message.MarshalBinary()
	signers := m.tx.Message.Signers()
	if err != nil || len(m.tx.Signatures) != len(signers) {
		return nil, fmt.Errorf("invalid_exact_svm_payload_transaction_signatures")
	}
	for i, k := range signers {
		if i > 0 && !m.tx.Signatures[i].Verify(k, msg) {
			return nil, fmt.Errorf("invalid_exact_svm_payload_transaction_signatures")
		}
	}
	return msg, nil
}

// settleSVM signs t as the fee payer and settles it once: the same transaction sent
// again is the one already settled, as Solana lands a signature once. Its
// transaction is the fee payer's signature, in base58, as Solana names transactions.
func (s *Seller) settleSVM(b facilitatorBody, t svmTransfer) (x402.Settlement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.settledSVM[t.key]; dup && s.mode == ModeReplayRefused {
		return x402.Settlement{}, fmt.Errorf("duplicate_settlement")
	}
	msg, _ := t.tx.Message.MarshalBinary()
	sig, err := feePayerKey.Sign(msg)
	if err != nil {
		return x402.Settlement{}, err
	}
	tx := sig.String()
	if _, dup := s.settledSVM[t.key]; !dup {
		s.settledSVM[t.key] = tx
		var res struct {
			URL string `json:"url"`
		}
		json.Unmarshal(b.Payment.Resource, &res)
		s.transfers = append(s.transfers, Transfer{ID: len(s.transfers) + 1, From: t.from, To: t.to, Value: t.value,
			Asset: DefaultSolanaAsset, Network: DefaultSolanaNetwork, Nonce: t.memo, Transaction: tx, Resource: res.URL,
			SettledAt: s.cfg.Now().UTC()})
	}
	return x402.Settlement{Success: true, Transaction: tx, Network: DefaultSolanaNetwork, Payer: t.from}, nil
}

// isSVM reports whether a facilitator request pays a Solana requirement.
func isSVM(b facilitatorBody) bool {
	var e struct {
		Network string `json:"network"`
	}
	json.Unmarshal(b.Requirements, &e)
	return x402.Namespace(e.Network) == "solana"
}

// svmSettledBefore reports whether the transaction of key was settled before.
func (s *Seller) svmSettledBefore(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.settledSVM[key]
	return ok
}

// nextBlockhash is the next recent blockhash: DefaultSolanaBlockhash first, then a
// new one each time.
func (s *Seller) nextBlockhash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := DefaultSolanaBlockhash
	if n := len(s.blockhashes); n > 0 {
		sum := sha256.Sum256([]byte("blockhash " + strconv.Itoa(n)))
		h = solana.HashFromBytes(sum[:]).String()
	}
	s.blockhashes = append(s.blockhashes, h)
	return h
}

// knownBlockhash reports whether h is DefaultSolanaBlockhash or one /rpc handed out.
func (s *Seller) knownBlockhash(h string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return h == DefaultSolanaBlockhash || slices.Contains(s.blockhashes, h)
}
