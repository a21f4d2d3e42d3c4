// An x402 v2 seller made of the reference packages that charges by use on Solana:
// its paid route, GET /report, is guarded by @x402/express's payment middleware with
// @x402/svm's upto server scheme, up to five cents, whose receiver authorizer signs
// the voucher for what the call used (the query's use, in atomic units; 3000 when
// none) through the middleware's settlement overrides. Its facilitator is
// @x402/core's x402Facilitator with @x402/svm's upto facilitator scheme and the
// facilitator signer @x402/svm builds, run in-process. Only the chain is faked, as in
// x402-seller-svm.mjs, and only as far as the payment-channels program's open,
// settle_and_seal and distribute need: token balances by associated token account,
// channel accounts in the program's layout, the Ed25519 precompile's voucher check,
// transactions landed once by their first signature, with the token balances they
// changed before and after, as a node's getTransaction shows them in its meta. GET
// /ledger lists what moved;
// GET /payments the payment headers received, so that a test can replay one. With
// no-slot, its server is given no rpcUrl, as the reference server runs by default:
// its offers name no recentSlot, and its facilitator reads its own slot.
//
//   node x402-seller-svm-upto.mjs PACKAGES_DIR PORT PAYTO [no-slot]
import { createRequire } from "node:module";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { join } from "node:path";
import { inProcess, serveReport } from "./x402-seller-app.mjs";

const [dir, port = "0", payTo = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4", mode = ""] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node x402-seller-svm-upto.mjs PACKAGES_DIR [PORT] [PAYTO]");
  process.exit(2);
}
const require = createRequire(join(dir, "package.json"));
const kit = require("@solana/kit");
const token = require("@solana-program/token");
const { x402ResourceServer } = require("@x402/express");
const { UptoSvmScheme: UptoSvmServer } = require("@x402/svm/upto/server");
const { UptoSvmScheme: UptoSvmFacilitator } = require("@x402/svm/upto/facilitator");
const { toFacilitatorSvmSigner } = require("@x402/svm");
const { x402Facilitator } = require("@x402/core/facilitator");

const network = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"; // Solana devnet
const usdc = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"; // its USDC, 6 decimals
const program = "CHNLxYvVA28MJP9PrFuDXccuoGXAx7jBacfLEkahyGsX";
const blockhash = "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N";
const SLOT = 345678901n;
const START_BALANCE = 1_000_000_000_000n; // a million USDC, in atomic units

// The chain: balances by token account, channels by address, transactions landed.
const balances = new Map();
const channels = new Map();
const landed = new Map(); // signature -> { base64, accounts, memo }
const ledger = [];
const balanceOf = (ata) => balances.get(ata) ?? START_BALANCE;
const txDecoder = kit.getTransactionDecoder();
const messageDecoder = kit.getCompiledTransactionMessageDecoder();
const b58 = kit.getBase58Decoder();
const b58bytes = kit.getBase58Encoder();
const ata = async (owner) =>
  (await token.findAssociatedTokenPda({ mint: usdc, owner, tokenProgram: token.TOKEN_PROGRAM_ADDRESS }))[0];
const u64 = (b, o) => new DataView(b.buffer, b.byteOffset + o, 8).getBigUint64(0, true);
const u32 = (b, o) => new DataView(b.buffer, b.byteOffset + o, 4).getUint32(0, true);
const u16 = (b, o) => new DataView(b.buffer, b.byteOffset + o, 2).getUint16(0, true);

// execute runs a wire transaction as the runtime would, on a copy of the state that
// send keeps: every signature present and valid (a simulation without sigVerify
// checks those there), the blockhash the chain handed out (unless the simulation
// replaces it), and the program's instructions. It returns the error Solana would.
async function execute(base64, { send, allSigned = true, anyBlockhash = false }) {
  const tx = txDecoder.decode(kit.getBase64Encoder().encode(base64));
  for (const [address, sig] of Object.entries(tx.signatures)) {
    if (!sig && !allSigned) continue;
    if (!sig) return { SignatureFailure: address };
    const key = await kit.getPublicKeyFromAddress(address);
    if (!(await kit.verifySignature(key, sig, tx.messageBytes))) return { SignatureFailure: address };
  }
  const compiled = messageDecoder.decode(tx.messageBytes);
  const message = kit.decompileTransactionMessage(compiled);
  if (!anyBlockhash && message.lifetimeConstraint?.blockhash !== blockhash) return "BlockhashNotFound";
  const firstSig = Object.values(tx.signatures)[0];
  const first = firstSig ? b58.decode(firstSig) : "";
  if (landed.has(first)) return "AlreadyProcessed";
  const bal = new Map(balances);
  // The token accounts the transaction touches, with their balances before it
  // (undefined: created by it).
  const before = new Map();
  const touch = (a, created = false) => { if (!before.has(a)) before.set(a, created ? undefined : (bal.get(a) ?? START_BALANCE)); };
  const chans = new Map([...channels].map(([k, v]) => [k, { ...v }]));
  const moved = [];
  let verified = null;
  for (const [i, ix] of message.instructions.entries()) {
    const fail = (why) => ({ InstructionError: [i, why] });
    const acct = (n) => ix.accounts?.[n]?.address;
    const data = ix.data ?? new Uint8Array();
    if (ix.programAddress === "Ed25519SigVerify111111111111111111111111111") {
      const sigOff = u16(data, 2), keyOff = u16(data, 6), msgOff = u16(data, 10), msgLen = u16(data, 12);
      const signer = b58.decode(data.subarray(keyOff, keyOff + 32));
      const msg = data.slice(msgOff, msgOff + msgLen);
      const key = await kit.getPublicKeyFromAddress(signer);
      if (!(await kit.verifySignature(key, data.slice(sigOff, sigOff + 64), msg))) return fail("InvalidSignature");
      verified = { signer, msg };
      continue;
    }
    if (ix.programAddress !== program) continue; // compute budget, memo
    const get = (a) => bal.get(a) ?? START_BALANCE;
    switch (data[0]) {
      case 1: { // open
        const salt = u64(data, 1), deposit = u64(data, 9), gracePeriod = u32(data, 17), openSlot = u64(data, 21);
        const n = u32(data, 29);
        const splits = [];
        for (let k = 0; k < n; k++) {
          splits.push({ recipient: b58.decode(data.subarray(33 + 34 * k, 65 + 34 * k)), bps: u16(data, 65 + 34 * k) });
        }
        const [payer, rentPayer, payee, mint, authorizedSigner, channel, payerTA, channelTA] = [0, 1, 2, 3, 4, 5, 6, 7].map(acct);
        const [pda] = await kit.getProgramDerivedAddress({
          programAddress: program,
          seeds: ["channel", ...[payer, payee, mint, authorizedSigner].map((a) => b58bytes.encode(a)),
            kit.getU64Encoder().encode(salt), kit.getU64Encoder().encode(openSlot)],
        });
        if (pda !== channel || mint !== usdc || payerTA !== (await ata(payer)) || channelTA !== (await ata(channel))) return fail("InvalidSeeds");
        if (chans.has(channel)) return fail("AccountAlreadyInUse");
        if (get(payerTA) < deposit) return fail("InsufficientFunds");
        touch(payerTA); touch(channelTA, true);
        bal.set(payerTA, get(payerTA) - deposit);
        bal.set(channelTA, deposit);
        chans.set(channel, { salt, deposit, settled: 0n, status: 0, gracePeriod, splits, payer, payee, authorizedSigner, mint, rentPayer, openSlot });
        break;
      }
      case 4: { // settle_and_seal: the voucher read from the Ed25519 instruction before it
        const c = chans.get(acct(1));
        if (!c || c.status !== 0) return fail("ChannelNotOpen");
        if (acct(0) !== c.payee) return fail("PayeeMismatch");
        if (data[1] === 1) {
          const m = verified?.msg;
          if (!m || verified.signer !== c.authorizedSigner || m[0] !== 86 || m[1] !== 1 || b58.decode(m.subarray(2, 34)) !== acct(1)) return fail("InvalidVoucher");
          const cumulative = u64(m, 34);
          if (cumulative > c.deposit) return fail("VoucherExceedsDeposit");
          c.settled = cumulative;
        }
        c.status = 1;
        break;
      }
      case 7: { // distribute: the settled amount to the splits, the rest back to the payer
        const c = chans.get(acct(0));
        if (!c || c.status !== 1) return fail("ChannelNotSealed");
        const channelTA = acct(3), payerTA = acct(4);
        if (payerTA !== (await ata(c.payer))) return fail("InvalidPayerAccount");
        let paid = 0n;
        for (const [k, s] of c.splits.entries()) {
          const share = (c.settled * BigInt(s.bps)) / 10000n;
          const to = ix.accounts[11 + k]?.address;
          if (to !== (await ata(s.recipient))) return fail("InvalidRecipientAccount");
          touch(to);
          bal.set(to, get(to) + share);
          paid += share;
          if (share > 0n) moved.push({ from: c.payer, to: s.recipient, destination: to, value: share.toString(), asset: usdc, channel: acct(0) });
        }
        touch(payerTA); touch(channelTA);
        bal.set(payerTA, get(payerTA) + (c.deposit - paid));
        bal.set(channelTA, 0n);
        c.status = 2;
        break;
      }
      default:
        return fail("InvalidInstructionData");
    }
  }
  if (send) {
    for (const [k, v] of bal) balances.set(k, v);
    for (const [k, v] of chans) channels.set(k, v);
    const memo = message.instructions.find((ix) => ix.programAddress === "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
    const tokenBalance = (a, amount) => ({ accountIndex: compiled.staticAccounts.indexOf(a), mint: usdc, programId: token.TOKEN_PROGRAM_ADDRESS,
      uiTokenAmount: { amount: amount.toString(), decimals: 6, uiAmountString: (Number(amount) / 1e6).toString() } });
    const pre = [...before].filter(([, v]) => v !== undefined).map(([a, v]) => tokenBalance(a, v));
    const post = [...before.keys()].map((a) => tokenBalance(a, bal.get(a) ?? START_BALANCE));
    landed.set(first, { base64, accounts: compiled.staticAccounts, memo: memo ? new TextDecoder().decode(memo.data) : "", pre, post });
    for (const m of moved) ledger.push({ transaction: first, ...m });
  }
  return { first, err: null };
}

// channelAccount is a channel in the program's layout (256 bytes).
function channelAccount(c) {
  const out = new Uint8Array(256);
  const dv = new DataView(out.buffer);
  out[0] = 1; out[1] = 1; out[2] = 255; out[3] = c.status;
  dv.setBigUint64(4, c.salt, true);
  dv.setBigUint64(12, c.deposit, true);
  dv.setBigUint64(20, c.settled, true);
  dv.setUint32(52, c.gracePeriod, true);
  const h = createHash("sha256");
  const count = new Uint8Array(4); new DataView(count.buffer).setUint32(0, c.splits.length, true);
  h.update(count);
  for (const s of c.splits) {
    h.update(b58bytes.encode(s.recipient));
    const bps = new Uint8Array(2); new DataView(bps.buffer).setUint16(0, s.bps, true);
    h.update(bps);
  }
  out.set(h.digest(), 56);
  [c.payer, c.payee, c.authorizedSigner, c.mint, c.rentPayer].forEach((a, k) => out.set(b58bytes.encode(a), 88 + 32 * k));
  dv.setBigUint64(248, c.openSlot, true);
  return out;
}

// The RPC's answers, as a node gives them.
async function answer(method, params) {
  switch (method) {
    case "getLatestBlockhash":
      return { context: { slot: Number(SLOT) }, value: { blockhash, lastValidBlockHeight: 300000000 } };
    case "getSlot":
      return Number(SLOT);
    case "getAccountInfo": {
      const c = channels.get(params[0]);
      return { context: { slot: Number(SLOT) }, value: c ? { data: [Buffer.from(channelAccount(c)).toString("base64"), "base64"], executable: false, lamports: 2_000_000, owner: program, rentEpoch: 0, space: 256 } : null };
    }
    case "simulateTransaction": {
      const r = await execute(params[0], { send: false, allSigned: params[1]?.sigVerify === true, anyBlockhash: params[1]?.replaceRecentBlockhash === true });
      return { context: { slot: Number(SLOT) }, value: { err: r.err === null ? null : r, logs: [], accounts: null, unitsConsumed: 60000, returnData: null } };
    }
    case "sendTransaction": {
      const r = await execute(params[0], { send: true });
      if (r.err !== null) throw Object.assign(new Error("Transaction simulation failed: " + JSON.stringify(r)), { code: -32002 });
      return r.first;
    }
    case "getSignatureStatuses":
      return {
        context: { slot: Number(SLOT) },
        value: params[0].map((s) => (landed.has(s) ? { slot: Number(SLOT), confirmations: 1, err: null, confirmationStatus: "confirmed", status: { Ok: null } } : null)),
      };
    case "isBlockhashValid":
      return { context: { slot: Number(SLOT) }, value: params[0] === blockhash };
    case "getSignaturesForAddress": {
      const out = [];
      for (const [signature, t] of landed) {
        if (!t.accounts.includes(params[0])) continue;
        out.unshift({ signature, slot: Number(SLOT), err: null, memo: t.memo ? `[${t.memo.length}] ${t.memo}` : null, blockTime: null, confirmationStatus: "confirmed" });
      }
      return out.slice(0, params[1]?.limit ?? 1000);
    }
    case "getTransaction": {
      const t = landed.get(params[0]);
      return t ? { slot: Number(SLOT), blockTime: null, meta: { err: null, preTokenBalances: t.pre, postTokenBalances: t.post }, transaction: [t.base64, "base64"] } : null;
    }
  }
  throw Object.assign(new Error(`the fake chain does not answer ${method}`), { code: -32601 });
}

const transport = async ({ payload }) => {
  try {
    return { jsonrpc: "2.0", id: payload.id, result: await answer(payload.method, payload.params) };
  } catch (e) {
    return { jsonrpc: "2.0", id: payload.id, error: { code: e.code ?? -32603, message: e.message } };
  }
};
const rpc = kit.createSolanaRpcFromTransport(transport);

const feePayer = await kit.generateKeyPairSigner();
const authorizer = await kit.generateKeyPairSigner();
const facilitator = new x402Facilitator().register(network, new UptoSvmFacilitator(toFacilitatorSvmSigner(feePayer, { [network]: rpc })));
// The server reads the blockhash and slot it offers from the chain's RPC (rpcUrl),
// served on a loopback port of its own; its authorizer signs the vouchers.
const rpcListener = createServer((req, res) => {
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", async () => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(await transport({ payload: JSON.parse(body) })));
  });
});
await new Promise((resolve) => rpcListener.listen(0, "127.0.0.1", resolve));
rpcListener.unref();
const uptoServer = new UptoSvmServer({
  receiverAuthorizerSigner: authorizer,
  rpcUrl: mode === "no-slot" ? undefined : `http://127.0.0.1:${rpcListener.address().port}`,
});
const server = new x402ResourceServer(inProcess(facilitator)).register(network, uptoServer);
const payments = [];

serveReport({
  require, server, network, payTo, ledger, port, name: "x402 SVM upto reference seller",
  accepts: { scheme: "upto", price: "$0.05", network, payTo },
  routes: (app, express) => {
    app.post("/rpc", express.json(), async (req, res) => res.json(await transport({ payload: req.body })));
    app.get("/payments", (req, res) => res.json(payments));
    app.use((req, res, next) => {
      const h = req.get("payment-signature");
      if (h) payments.push(h);
      next();
    });
  },
  report: (req, res, { setSettlementOverrides }) => {
    const topic = String(req.query.topic ?? "everything");
    setSettlementOverrides(res, { amount: String(req.query.use ?? "3000") });
    res.json({ topic, report: `On ${topic}: the reference seller's report.` });
  },
});
