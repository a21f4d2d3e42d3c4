// An MCP host built on the official TypeScript SDK that connects with OAuth from
// nothing: auth() discovers the server's metadata, registers with its redirect URL
// (the second argument: a loopback one, as desktop hosts have), and asks for the
// person's consent by printing the authorization URL; the test gives the person's
// answer (the code) on stdin, and the host exchanges it, lists its tools, refreshes,
// and, told on stdin that the token was revoked, tries once more. Each step is one
// JSON line on stdout.
// CommonJS, so that NODE_PATH finds the pinned SDK.
const readline = require('node:readline');
const { auth } = require('@modelcontextprotocol/sdk/client/auth.js');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const serverUrl = process.argv[2];
const redirectUrl = process.argv[3] || 'http://127.0.0.1:1/callback';
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (v) => console.log(JSON.stringify(v));

let info, tokens, verifier;
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: 'SDK host', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientInformation: () => info,
  saveClientInformation: (i) => { info = i; },
  tokens: () => tokens,
  saveTokens: (t) => { tokens = t; },
  redirectToAuthorization: (url) => say({ authorize: url.toString() }),
  saveCodeVerifier: (v) => { verifier = v; },
  codeVerifier: () => verifier,
};

async function tools() {
  const client = new Client({ name: 'sdk-host', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider }));
  const { tools } = await client.listTools();
  await client.close();
  return tools.map((t) => t.name).sort();
}

async function main() {
  say({ first: await auth(provider, { serverUrl }) });
  const code = (await lines.next()).value;
  say({ exchanged: await auth(provider, { serverUrl, authorizationCode: code }), clientId: info.client_id });
  say({ tools: await tools(), access: tokens.access_token });
  // A refresh: auth() with a refresh token in hand rotates it.
  const before = tokens.refresh_token;
  say({ refreshed: await auth(provider, { serverUrl }), rotated: tokens.refresh_token !== before });
  say({ tools: await tools(), access: tokens.access_token, refresh: tokens.refresh_token });
  await lines.next(); // the test revoked the token
  try {
    say({ afterRevocation: await tools() });
  } catch (err) {
    say({ refused: String(err) });
  }
}

main().catch((err) => say({ error: String((err && err.stack) || err) })).finally(() => process.exit(0));
