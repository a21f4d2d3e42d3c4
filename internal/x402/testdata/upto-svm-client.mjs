// Builds an upto payment on Solana with the reference client (@x402/svm's
// UptoSvmScheme) for the inputs on stdin, and writes its payload as JSON: what the
// service's own open must equal byte for byte. The client draws the channel's salt
// and the memo at random and reads the clock; here they come from the input (the
// salt's 8 bytes, then the memo's 16) so that both sides build the same payment.
// The seller's extra carries the blockhash, the slot and the token program, so the
// client reads no RPC.
//
//   echo '{"keypair":"hex of 64 bytes","random":"hex","now":1700000000,"requirements":{...}}' |
//     node upto-svm-client.mjs PACKAGES_DIR
import { createRequire } from "node:module";
import { join } from "node:path";
import { readFileSync } from "node:fs";

const [dir] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node upto-svm-client.mjs PACKAGES_DIR < input.json");
  process.exit(2);
}
const require = createRequire(join(dir, "package.json"));
const kit = require("@solana/kit");
const { UptoSvmScheme } = require("@x402/svm/upto/client");

const input = JSON.parse(readFileSync(0, "utf8"));
const signer = await kit.createKeyPairSignerFromBytes(Uint8Array.from(Buffer.from(input.keypair, "hex")));

const random = Buffer.from(input.random, "hex");
let drawn = 0;
const getRandomValues = globalThis.crypto.getRandomValues.bind(globalThis.crypto);
Object.defineProperty(globalThis.crypto, "getRandomValues", {
  configurable: true,
  value: (arr) => {
    const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
    if (drawn + bytes.length > random.length) return getRandomValues(arr);
    bytes.set(random.subarray(drawn, drawn + bytes.length));
    drawn += bytes.length;
    return arr;
  },
});
Date.now = () => input.now * 1000;

const client = new UptoSvmScheme(signer);
const { payload } = await client.createPaymentPayload(2, input.requirements);
process.stdout.write(JSON.stringify({ payload, drawn }) + "\n");
