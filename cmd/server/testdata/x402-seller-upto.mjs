// An x402 v2 seller made of the reference packages that charges by use: its paid
// route, GET /report, is guarded by @x402/express's payment middleware with
// @x402/evm's upto EVM scheme on the resource server, up to five cents, and settles
// what the call used (the query's use, in atomic units; 3000 when none) through the
// middleware's settlement overrides. Its facilitator is @x402/core's x402Facilitator
// with @x402/evm's upto facilitator scheme, run in-process, paying through Permit2
// and x402's upto proxy on the fake chain (x402-chain.mjs). Besides GET /ledger and
// POST /rpc as the exact seller: POST /approve?owner=0x... stands for the owner's
// one-time approval of Permit2 on the token, and GET /payments lists the payment
// headers it received, so that a test can replay one.
//
//   node x402-seller-upto.mjs PACKAGES_DIR PORT PAYTO
import { createRequire } from "node:module";
import { join } from "node:path";
import { fakeChain } from "./x402-chain.mjs";
import { inProcess, serveReport } from "./x402-seller-app.mjs";

const [dir, port = "0", payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node x402-seller-upto.mjs PACKAGES_DIR [PORT] [PAYTO]");
  process.exit(2);
}
const require = createRequire(join(dir, "package.json"));
const viem = require("viem");
const { x402ResourceServer } = require("@x402/express");
const { UptoEvmScheme: UptoEvmServer } = require("@x402/evm/upto/server");
const { UptoEvmScheme: UptoEvmFacilitator } = require("@x402/evm/upto/facilitator");
const { x402Facilitator } = require("@x402/core/facilitator");

const network = "eip155:84532"; // Base Sepolia
const usdc = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const { client: chain, ledger, rpc, approvePermit2 } = fakeChain(viem, {
  chainId: 84532,
  asset: usdc,
  facilitator: "0x1111111111111111111111111111111111111111",
});

const facilitator = new x402Facilitator().register(network, new UptoEvmFacilitator(chain));
const server = new x402ResourceServer(inProcess(facilitator)).register(network, new UptoEvmServer());
const payments = [];

serveReport({
  require, server, network, payTo, ledger, port, name: "x402 upto reference seller",
  accepts: { scheme: "upto", price: "$0.05", network, payTo },
  routes: (app, express) => {
    app.post("/rpc", express.json(), async (req, res) => res.json(await rpc(req.body)));
    app.post("/approve", (req, res) => {
      approvePermit2(String(req.query.owner));
      res.status(204).end();
    });
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
