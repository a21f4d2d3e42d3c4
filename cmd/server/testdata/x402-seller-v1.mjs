// An x402 v1 seller made of the reference packages: an express app whose one paid
// route, GET /report, is guarded by x402-express's payment middleware; its facilitator
// is x402's own verify and settle (x402/facilitator) behind the facilitator HTTP API
// the middleware calls (/verify, /settle, /supported), on a loopback port of its own
// in the same process, as the reference facilitator example serves them. Only the
// chain is faked (x402-chain.mjs); GET /ledger lists the transfers it settled, and
// POST /rpc answers the chain's JSON-RPC eth_call.
//
//   node x402-seller-v1.mjs PACKAGES_DIR PORT PAYTO
//
// PACKAGES_DIR holds the packages' node_modules (make installs them into var/tools);
// PORT may be 0. The first line written to stdout names the address listened on.
import { createRequire } from "node:module";
import { join } from "node:path";
import { fakeChain } from "./x402-chain.mjs";

const [dir, port = "0", payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node x402-seller-v1.mjs PACKAGES_DIR [PORT] [PAYTO]");
  process.exit(2);
}
const require = createRequire(join(dir, "package.json"));
const express = require("express");
const viem = require("viem");
const { paymentMiddleware } = require("x402-express");
const { verify, settle } = require("x402/facilitator");
const { PaymentPayloadSchema, PaymentRequirementsSchema } = require("x402/types");

const network = "base-sepolia";
const usdc = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"; // its USDC, EIP-712 name USDC version 2
const { client: chain, ledger, rpc } = fakeChain(viem, {
  chainId: 84532,
  asset: usdc,
  facilitator: "0x1111111111111111111111111111111111111111",
});

// The facilitator: x402's verify and settle, the fake chain's client standing for
// both the connected client and the signer.
const fac = express();
fac.use(express.json());
fac.get("/supported", (req, res) => {
  res.json({ kinds: [{ x402Version: 1, scheme: "exact", network }] });
});
fac.post("/verify", async (req, res) => {
  try {
    const requirements = PaymentRequirementsSchema.parse(req.body.paymentRequirements);
    const payload = PaymentPayloadSchema.parse(req.body.paymentPayload);
    res.json(await verify(chain, payload, requirements));
  } catch (err) {
    console.error("verify:", err);
    res.status(400).json({ error: String(err) });
  }
});
fac.post("/settle", async (req, res) => {
  try {
    const requirements = PaymentRequirementsSchema.parse(req.body.paymentRequirements);
    const payload = PaymentPayloadSchema.parse(req.body.paymentPayload);
    res.json(await settle(chain, payload, requirements));
  } catch (err) {
    console.error("settle:", err);
    res.status(400).json({ error: String(err) });
  }
});

const facListener = fac.listen(0, "127.0.0.1", () => {
  const facilitatorURL = `http://127.0.0.1:${facListener.address().port}`;
  const app = express();
  app.get("/ledger", (req, res) => res.json(ledger));
  app.post("/rpc", express.json(), async (req, res) => res.json(await rpc(req.body)));
  app.use(
    paymentMiddleware(
      payTo,
      {
        "GET /report": {
          price: "$0.01",
          network,
          config: { description: "A short report on a topic", mimeType: "application/json" },
        },
      },
      { url: facilitatorURL },
    ),
  );
  app.get("/report", (req, res) => {
    const topic = String(req.query.topic ?? "everything");
    res.json({ topic, report: `On ${topic}: the reference seller's report.` });
  });
  const listener = app.listen(Number(port), "127.0.0.1", () => {
    const { address, port } = listener.address();
    console.log(`x402 v1 reference seller on http://${address}:${port} (facilitator ${facilitatorURL})`);
  });
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, () => listener.close(() => facListener.close(() => process.exit(0))));
  }
});
