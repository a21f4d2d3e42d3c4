// Has the reference facilitator (@x402/svm's upto UptoSvmScheme, with the fee
// payer's key) verify a PAYMENT-SIGNATURE header against the requirements it
// accepted, at a given clock, and writes its answer as JSON. When the requirements
// carry the seller's slot verify reads no RPC; when they do not, it reads its own
// slot, input.slot (getSlot). Any other call fails.
//
//   echo '{"feePayer":"hex of 64 bytes","now":1700000000,"header":"base64","slot":345678901}' |
//     node upto-svm-verify.mjs PACKAGES_DIR
import { createRequire } from "node:module";
import { join } from "node:path";
import { readFileSync } from "node:fs";

const [dir] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node upto-svm-verify.mjs PACKAGES_DIR < input.json");
  process.exit(2);
}
const require = createRequire(join(dir, "package.json"));
const kit = require("@solana/kit");
const { toFacilitatorSvmSigner } = require("@x402/svm");
const { UptoSvmScheme } = require("@x402/svm/upto/facilitator");

const input = JSON.parse(readFileSync(0, "utf8"));
const feePayer = await kit.createKeyPairSignerFromBytes(Uint8Array.from(Buffer.from(input.feePayer, "hex")));
const transport = async ({ payload }) =>
  payload.method === "getSlot" && input.slot !== undefined
    ? { jsonrpc: "2.0", id: payload.id, result: input.slot }
    : { jsonrpc: "2.0", id: payload.id, error: { code: -32601, message: `no RPC here: ${payload.method}` } };
const rpc = kit.createSolanaRpcFromTransport(transport);
const payment = JSON.parse(Buffer.from(input.header, "base64").toString("utf8"));
const facilitator = new UptoSvmScheme(toFacilitatorSvmSigner(feePayer, { [payment.accepted.network]: rpc }));
Date.now = () => input.now * 1000;
const result = await facilitator.verify(payment, payment.accepted);
process.stdout.write(JSON.stringify(result) + "\n");
