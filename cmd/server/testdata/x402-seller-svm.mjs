// An x402 v2 seller made of the reference packages, paid on Solana: an express app
// whose one paid route, GET /report, is guarded by @x402/express's payment middleware
// with @x402/svm's exact scheme on the resource server; its facilitator is
// @x402/core's x402Facilitator with @x402/svm's exact facilitator scheme and the
// facilitator signer @x402/svm builds (toFacilitatorSvmSigner), run in-process. Only
// the chain is faked: the Solana RPC the signer calls (simulateTransaction,
// sendTransaction, getSignatureStatuses; and for the service isBlockhashValid,
// getSignaturesForAddress and getTransaction) answers from a USDC token kept in memory,
// through @solana/kit's own RPC client over a transport that never leaves the
// process. The fake chain checks every signature (sigVerify), the blockhash, the
// TransferChecked and the payer's balance, lands a transaction once by its first
// signature as Solana does, and GET /ledger lists the transfers it landed; POST
// /expire makes its blockhash expire.
//
//   node x402-seller-svm.mjs PACKAGES_DIR PORT PAYTO
//
// PACKAGES_DIR holds the packages' node_modules (make installs them into var/tools);
// PORT may be 0. The first line written to stdout names the address listened on.
import { createRequire } from "node:module";
import { join } from "node:path";
import { inProcess, serveReport } from "./x402-seller-app.mjs";

const [dir, port = "0", payTo = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4", blockhash = "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N"] =
  process.argv.slice(2);
if (!dir) {
  console.error("usage: node x402-seller-svm.mjs PACKAGES_DIR [PORT] [PAYTO] [BLOCKHASH]");
  process.exit(2);
}
const require = createRequire(join(dir, "package.json"));
const kit = require("@solana/kit");
const token = require("@solana-program/token");
const { x402ResourceServer } = require("@x402/express");
const { ExactSvmScheme: ExactSvmServer } = require("@x402/svm/exact/server");
const { ExactSvmScheme: ExactSvmFacilitator } = require("@x402/svm/exact/facilitator");
const { toFacilitatorSvmSigner } = require("@x402/svm");
const { x402Facilitator } = require("@x402/core/facilitator");

const network = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"; // Solana devnet
const usdc = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"; // its USDC, 6 decimals
const START_BALANCE = 1_000_000_000_000n; // a million USDC, in atomic units

// The chain: token balances by associated token account, transactions landed by
// their first signature, and the ledger of transfers.
const spent = new Map();
const received = new Map();
const landed = new Map(); // signature -> status
const transactions = new Map(); // signature -> { base64, accounts, memo }
let blockhashValid = true;
const ledger = [];
const balanceOf = (ata) => START_BALANCE - (spent.get(ata) ?? 0n) + (received.get(ata) ?? 0n);
const txDecoder = kit.getTransactionDecoder();
const messageDecoder = kit.getCompiledTransactionMessageDecoder();
const signatureDecoder = kit.getBase58Decoder();

// execute checks a wire transaction as the runtime would: every signature present
// and valid (a simulation without sigVerify: those there valid), the blockhash the chain handed out, and its instructions those of a
// transfer this chain holds; send makes the transfer happen. It returns the error
// Solana would, or null.
async function execute(base64, send, allSigned = true) {
  const tx = txDecoder.decode(kit.getBase64Encoder().encode(base64));
  for (const [address, sig] of Object.entries(tx.signatures)) {
    if (!sig && !allSigned) continue; // a simulation without sigVerify checks the signatures there are
    if (!sig) return { SignatureFailure: address };
    const key = await kit.getPublicKeyFromAddress(address);
    if (!(await kit.verifySignature(key, sig, tx.messageBytes))) return { SignatureFailure: address };
  }
  const message = kit.decompileTransactionMessage(messageDecoder.decode(tx.messageBytes));
  if (message.lifetimeConstraint?.blockhash !== blockhash) return "BlockhashNotFound";
  const firstSig = Object.values(tx.signatures)[0];
  const first = firstSig ? signatureDecoder.decode(firstSig) : "";
  if (landed.has(first)) return "AlreadyProcessed";
  let transfer = null;
  for (const ix of message.instructions) {
    if (ix.programAddress !== token.TOKEN_PROGRAM_ADDRESS) continue;
    const t = token.parseTransferCheckedInstruction(ix);
    if (t.accounts.mint.address !== usdc || t.data.decimals !== 6) return { InstructionError: [2, "InvalidMint"] };
    const [source] = await token.findAssociatedTokenPda({ mint: usdc, owner: t.accounts.authority.address, tokenProgram: token.TOKEN_PROGRAM_ADDRESS });
    if (source !== t.accounts.source.address) return { InstructionError: [2, "OwnerMismatch"] };
    if (balanceOf(source) < t.data.amount) return { InstructionError: [2, "InsufficientFunds"] };
    transfer = { source, destination: t.accounts.destination.address, from: t.accounts.authority.address, amount: t.data.amount };
  }
  if (!transfer) return { InstructionError: [0, "NoTransfer"] };
  if (send) {
    spent.set(transfer.source, (spent.get(transfer.source) ?? 0n) + transfer.amount);
    received.set(transfer.destination, (received.get(transfer.destination) ?? 0n) + transfer.amount);
    const memo = message.instructions.find((ix) => ix.programAddress === "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
    landed.set(first, "confirmed");
    const accounts = messageDecoder.decode(tx.messageBytes).staticAccounts;
    const memoText = memo ? new TextDecoder().decode(memo.data) : "";
    transactions.set(first, { base64, accounts, memo: memoText });
    ledger.push({
      transaction: first, from: transfer.from, to: payTo, destination: transfer.destination,
      value: transfer.amount.toString(), asset: usdc, nonce: memo ? new TextDecoder().decode(memo.data) : "",
    });
  }
  return { first, err: null };
}

// The RPC's answers, as a node gives them.
async function answer(method, params) {
  switch (method) {
    case "getLatestBlockhash":
      return { context: { slot: 1 }, value: { blockhash, lastValidBlockHeight: 151 } };
    case "simulateTransaction": {
      const r = await execute(params[0], false, params[1]?.sigVerify === true);
      return { context: { slot: 1 }, value: { err: r.err === null ? null : r, logs: [], accounts: null, unitsConsumed: 6000, returnData: null } };
    }
    case "sendTransaction": {
      const r = await execute(params[0], true);
      if (r.err !== null) throw Object.assign(new Error("Transaction simulation failed: " + JSON.stringify(r)), { code: -32002 });
      return r.first;
    }
    case "isBlockhashValid":
      return { context: { slot: 2 }, value: blockhashValid && params[0] === blockhash };
    case "getSignaturesForAddress": {
      // Newest first, with each transaction's memo as a node writes it.
      const out = [];
      for (const [signature, t] of transactions) {
        if (!t.accounts.includes(params[0])) continue;
        out.unshift({ signature, slot: 2, err: null, memo: t.memo ? `[${t.memo.length}] ${t.memo}` : null, blockTime: null, confirmationStatus: "confirmed" });
      }
      return out.slice(0, params[1]?.limit ?? 1000);
    }
    case "getTransaction": {
      const t = transactions.get(params[0]);
      return t ? { slot: 2, blockTime: null, meta: { err: null }, transaction: [t.base64, "base64"] } : null;
    }
    case "getSignatureStatuses":
      return {
        context: { slot: 2 },
        value: params[0].map((s) => (landed.has(s) ? { slot: 2, confirmations: 1, err: null, confirmationStatus: landed.get(s), status: { Ok: null } } : null)),
      };
  }
  throw Object.assign(new Error(`the fake chain does not answer ${method}`), { code: -32601 });
}

// A transport that answers the RPC in process: the packages' own client sends through it.
const transport = async ({ payload }) => {
  try {
    return { jsonrpc: "2.0", id: payload.id, result: await answer(payload.method, payload.params) };
  } catch (e) {
    return { jsonrpc: "2.0", id: payload.id, error: { code: e.code ?? -32603, message: e.message } };
  }
};
const rpc = kit.createSolanaRpcFromTransport(transport);

// The reference facilitator, in-process, with the fee payer's key, as the resource
// server's facilitator client.
const feePayer = await kit.generateKeyPairSigner();
const facilitator = new x402Facilitator().register(network, new ExactSvmFacilitator(toFacilitatorSvmSigner(feePayer, { [network]: rpc })));
const server = new x402ResourceServer(inProcess(facilitator)).register(network, new ExactSvmServer());

serveReport({
  require, server, network, payTo, ledger, port, name: "x402 SVM reference seller",
  // The RPC, for the service's recent blockhash.
  routes: (app, express) => {
    app.post("/rpc", express.json(), async (req, res) => res.json(await transport({ payload: req.body })));
    // The blockhash expires: nothing signed over it can land any more.
    app.post("/expire", (req, res) => { blockhashValid = false; res.json({ expired: blockhash }); });
  },
});
