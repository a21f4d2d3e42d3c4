// An x402 v2 seller made of the reference packages: an express app whose one paid
// route, GET /report, is guarded by @x402/express's payment middleware, with
// @x402/evm's exact EVM scheme on the resource server; its facilitator is @x402/core's
// x402Facilitator with @x402/evm's exact EVM facilitator scheme, run in-process. Only
// the chain is faked (x402-chain.mjs); GET /ledger lists the transfers it settled, and
// POST /rpc answers the chain's JSON-RPC eth_call.
//
//   node x402-seller-v2.mjs PACKAGES_DIR PORT PAYTO
//
// PACKAGES_DIR holds the packages' node_modules (make installs them into var/tools);
// PORT may be 0. The first line written to stdout names the address listened on.
import { createRequire } from "node:module";
import { join } from "node:path";
import { fakeChain } from "./x402-chain.mjs";
import { inProcess, serveReport } from "./x402-seller-app.mjs";

const [dir, port = "0", payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node x402-seller-v2.mjs PACKAGES_DIR [PORT] [PAYTO]");
  process.exit(2);
}
const require = createRequire(join(dir, "package.json"));
const viem = require("viem");
const { x402ResourceServer } = require("@x402/express");
const { ExactEvmScheme: ExactEvmServer } = require("@x402/evm/exact/server");
const { ExactEvmScheme: ExactEvmFacilitator } = require("@x402/evm/exact/facilitator");
const { x402Facilitator } = require("@x402/core/facilitator");

const network = "eip155:84532"; // Base Sepolia
const usdc = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"; // its USDC, EIP-712 name USDC version 2
const { client: chain, ledger, rpc } = fakeChain(viem, {
  chainId: 84532,
  asset: usdc,
  facilitator: "0x1111111111111111111111111111111111111111",
});

// The reference facilitator, in-process, as the resource server's facilitator client.
const facilitator = new x402Facilitator().register(network, new ExactEvmFacilitator(chain));
const server = new x402ResourceServer(inProcess(facilitator)).register(network, new ExactEvmServer());

serveReport({
  require, server, network, payTo, ledger, port, name: "x402 v2 reference seller",
  // The chain's JSON-RPC, for the state of an authorization.
  routes: (app, express) => app.post("/rpc", express.json(), async (req, res) => res.json(await rpc(req.body))),
});
