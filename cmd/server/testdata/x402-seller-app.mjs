// What the v2 reference sellers share: the reference facilitator run in-process as the
// resource server's facilitator client, and an express app whose one paid route,
// GET /report, is guarded by @x402/express's payment middleware, beside GET /ledger.
// Each seller brings its scheme, its chain and any route of its own.

// inProcess makes a facilitator client of a reference facilitator (@x402/core's
// x402Facilitator with a scheme registered). Refusals are written to stderr, which the
// test shows when it fails.
export function inProcess(facilitator) {
  const said = (what) => (r) => {
    if (r.isValid === false || r.success === false) console.error(what, JSON.stringify(r));
    return r;
  };
  return {
    verify: (payload, requirements) => facilitator.verify(payload, requirements).then(said("verify")),
    settle: (payload, requirements) => facilitator.settle(payload, requirements).then(said("settle")),
    getSupported: async () => facilitator.getSupported(),
  };
}

// serveReport listens on 127.0.0.1:port with the paid GET /report at one cent on
// network to payTo (or as accepts says, answered by report(req, res, express's
// module) when given), GET /ledger answering ledger, and routes(app, express)
// added before the payment middleware. require resolves the packages' node_modules. The
// first line written to stdout names the address listened on; SIGINT and SIGTERM
// close the listener.
export function serveReport({ require, server, network, payTo, ledger, port, name, routes = () => {}, accepts, report }) {
  const express = require("express");
  const { paymentMiddleware } = require("@x402/express");
  const app = express();
  app.get("/ledger", (req, res) => res.json(ledger));
  routes(app, express);
  app.use(
    paymentMiddleware(
      {
        "GET /report": {
          accepts: accepts ?? { scheme: "exact", price: "$0.01", network, payTo },
          description: "A short report on a topic",
          mimeType: "application/json",
        },
      },
      server,
    ),
  );
  app.get("/report", (req, res) => {
    if (report) return report(req, res, require("@x402/express"));
    const topic = String(req.query.topic ?? "everything");
    res.json({ topic, report: `On ${topic}: the reference seller's report.` });
  });
  const listener = app.listen(Number(port), "127.0.0.1", () => {
    const { address, port } = listener.address();
    console.log(`${name} on http://${address}:${port}`);
  });
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => listener.close(() => process.exit(0)));
}
