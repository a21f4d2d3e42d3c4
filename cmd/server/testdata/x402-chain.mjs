// A fake EVM chain for the sellers built from the x402 reference packages: one USDC
// contract (EIP-3009) kept in memory, reached through the client methods the reference
// facilitators call (readContract, verifyTypedData, writeContract,
// waitForTransactionReceipt, getCode). Nothing else is faked: the facilitators'
// own logic verifies and settles; rpc answers eth_call of the token, as a node would. The contract checks a transferWithAuthorization as
// FiatTokenV2 does (the time window, an unused nonce, the signer, the balance), both
// when it is simulated with readContract and when it is sent with writeContract;
// a sent one moves the balance, marks the nonce used and is written to the ledger,
// and its receipt carries the ERC-20 Transfer log.
//
// viem is passed in, so that the chain uses the same copy as the packages do.

const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
// Permit2 and x402's upto proxy, which the upto scheme pays through.
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
const UPTO_PROXY = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002";
const START_BALANCE = 1_000_000_000_000n; // a million USDC, in atomic units

const tokenABI = [
  { type: "function", name: "balanceOf", stateMutability: "view", inputs: [{ name: "account", type: "address" }], outputs: [{ type: "uint256" }] },
  { type: "function", name: "name", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
  { type: "function", name: "version", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
  { type: "function", name: "decimals", stateMutability: "view", inputs: [], outputs: [{ type: "uint8" }] },
  {
    type: "function", name: "authorizationState", stateMutability: "view",
    inputs: [{ name: "authorizer", type: "address" }, { name: "nonce", type: "bytes32" }], outputs: [{ type: "bool" }],
  },
  {
    type: "function", name: "transferWithAuthorization", stateMutability: "nonpayable",
    inputs: [
      { name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" },
      { name: "v", type: "uint8" }, { name: "r", type: "bytes32" }, { name: "s", type: "bytes32" },
    ],
    outputs: [],
  },
  {
    type: "function", name: "transferWithAuthorization", stateMutability: "nonpayable",
    inputs: [
      { name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" },
      { name: "signature", type: "bytes" },
    ],
    outputs: [],
  },
  {
    type: "function", name: "allowance", stateMutability: "view",
    inputs: [{ name: "owner", type: "address" }, { name: "spender", type: "address" }], outputs: [{ type: "uint256" }],
  },
  {
    type: "event", name: "Transfer", anonymous: false,
    inputs: [{ name: "from", type: "address", indexed: true }, { name: "to", type: "address", indexed: true }, { name: "value", type: "uint256", indexed: false }],
  },
];

const authorizationTypes = {
  TransferWithAuthorization: [
    { name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" },
  ],
};

// Permit2's view of its unordered nonces: a bitmap of 256 per word.
const permit2ABI = [
  {
    type: "function", name: "nonceBitmap", stateMutability: "view",
    inputs: [{ name: "owner", type: "address" }, { name: "wordPos", type: "uint256" }], outputs: [{ type: "uint256" }],
  },
];

// x402's upto proxy's settle, as @x402/evm's x402UptoPermit2ProxyABI has it: what a
// settlement transaction's call data encodes.
const uptoProxyABI = [{
  type: "function", name: "settle", stateMutability: "nonpayable", outputs: [],
  inputs: [
    {
      name: "permit", type: "tuple", components: [
        { name: "permitted", type: "tuple", components: [{ name: "token", type: "address" }, { name: "amount", type: "uint256" }] },
        { name: "nonce", type: "uint256" }, { name: "deadline", type: "uint256" },
      ],
    },
    { name: "amount", type: "uint256" }, { name: "owner", type: "address" },
    {
      name: "witness", type: "tuple", components: [
        { name: "to", type: "address" }, { name: "facilitator", type: "address" }, { name: "validAfter", type: "uint256" },
      ],
    },
    { name: "signature", type: "bytes" },
  ],
}];

const uptoWitnessTypes = {
  PermitWitnessTransferFrom: [
    { name: "permitted", type: "TokenPermissions" }, { name: "spender", type: "address" },
    { name: "nonce", type: "uint256" }, { name: "deadline", type: "uint256" }, { name: "witness", type: "Witness" },
  ],
  TokenPermissions: [{ name: "token", type: "address" }, { name: "amount", type: "uint256" }],
  Witness: [{ name: "to", type: "address" }, { name: "facilitator", type: "address" }, { name: "validAfter", type: "uint256" }],
};

class Revert extends Error {}

/**
 * fakeChain returns a client of a chain holding one USDC contract at asset, and the
 * ledger of the transfers it settled.
 */
export function fakeChain(viem, { chainId, asset, name = "USDC", version = "2", facilitator }) {
  const token = viem.getAddress(asset);
  const used = new Set(); // authorizer|nonce
  const spent = new Map(); // address -> atomic units sent
  const received = new Map();
  const receipts = new Map(); // hash -> receipt
  const transactions = new Map(); // hash -> { to, input, block }
  const ledger = [];
  let block = 1_000_000n;
  // Blocks up to the first are two seconds apart, the last mined as the chain
  // starts; each transaction is mined in a block of its own, at the time it is sent.
  const genesis = BigInt(Math.floor(Date.now() / 1000));
  const minedAt = new Map(); // block -> Unix seconds
  const timestampOf = (n) => minedAt.get(n) ?? genesis - (1_000_000n - n) * 2n;
  const mine = () => {
    block += 1n;
    minedAt.set(block, BigInt(Math.floor(Date.now() / 1000)));
    return block;
  };

  const allowances = new Map(); // owner -> atomic units Permit2 may move
  const permit2Used = new Set(); // owner|nonce

  const balanceOf = (a) => START_BALANCE - (spent.get(viem.getAddress(a)) ?? 0n) + (received.get(viem.getAddress(a)) ?? 0n);
  const key = (from, nonce) => `${viem.getAddress(from)}|${nonce.toLowerCase()}`;

  // The contract's transferWithAuthorization, checked; send makes it happen.
  async function transferWithAuthorization(args, send) {
    const [from, to, value, validAfter, validBefore, nonce] = args;
    let signature;
    if (args.length === 9) {
      const v = Number(args[6]);
      signature = viem.serializeSignature(v < 27 ? { r: args[7], s: args[8], yParity: v } : { r: args[7], s: args[8], v: BigInt(v) });
    } else if (args.length === 7) {
      signature = args[6];
    } else {
      throw new Revert("transferWithAuthorization: wrong number of arguments");
    }
    const now = BigInt(Math.floor(Date.now() / 1000));
    if (now <= BigInt(validAfter)) throw new Revert("FiatTokenV2: authorization is not yet valid");
    if (now >= BigInt(validBefore)) throw new Revert("FiatTokenV2: authorization is expired");
    if (used.has(key(from, nonce))) throw new Revert("FiatTokenV2: authorization is used or canceled");
    const ok = await viem.verifyTypedData({
      address: from,
      domain: { name, version, chainId, verifyingContract: token },
      types: authorizationTypes,
      primaryType: "TransferWithAuthorization",
      message: { from, to, value: BigInt(value), validAfter: BigInt(validAfter), validBefore: BigInt(validBefore), nonce },
      signature,
    }).catch(() => false);
    if (!ok) throw new Revert("FiatTokenV2: invalid signature");
    if (balanceOf(from) < BigInt(value)) throw new Revert("ERC20: transfer amount exceeds balance");
    if (!send) return undefined;

    used.add(key(from, nonce));
    spent.set(viem.getAddress(from), (spent.get(viem.getAddress(from)) ?? 0n) + BigInt(value));
    received.set(viem.getAddress(to), (received.get(viem.getAddress(to)) ?? 0n) + BigInt(value));
    mine();
    const hash = viem.keccak256(viem.toHex(`${chainId}|${token}|${key(from, nonce)}|${block}`));
    transactions.set(hash, { to: token, input: "0x", block });
    receipts.set(hash, {
      status: "success",
      transactionHash: hash,
      blockNumber: block,
      from: facilitator,
      to: token,
      logs: [{
        address: token,
        topics: viem.encodeEventTopics({ abi: tokenABI, eventName: "Transfer", args: { from, to } }),
        data: viem.encodeAbiParameters([{ type: "uint256" }], [BigInt(value)]),
        blockNumber: block,
        blockHash: viem.keccak256(viem.toHex(block)),
        logIndex: 0,
        transactionHash: hash,
        transactionIndex: 0,
        removed: false,
      }],
    });
    ledger.push({
      transaction: hash,
      from: viem.getAddress(from),
      to: viem.getAddress(to),
      value: BigInt(value).toString(),
      nonce,
      asset: token,
    });
    return hash;
  }

  // move moves value from from to to, as a mined transaction sent with input whose
  // receipt carries the token's Transfer log, and writes it to the ledger.
  function move(from, to, value, nonce, input) {
    spent.set(viem.getAddress(from), (spent.get(viem.getAddress(from)) ?? 0n) + value);
    received.set(viem.getAddress(to), (received.get(viem.getAddress(to)) ?? 0n) + value);
    mine();
    const hash = viem.keccak256(viem.toHex(`${chainId}|${token}|upto|${viem.getAddress(from)}|${nonce}|${block}`));
    transactions.set(hash, { to: UPTO_PROXY, input, block });
    receipts.set(hash, {
      status: "success", transactionHash: hash, blockNumber: block, from: facilitator, to: UPTO_PROXY,
      logs: [{
        address: token,
        topics: viem.encodeEventTopics({ abi: tokenABI, eventName: "Transfer", args: { from, to } }),
        data: viem.encodeAbiParameters([{ type: "uint256" }], [value]),
        blockNumber: block, blockHash: viem.keccak256(viem.toHex(block)), logIndex: 0,
        transactionHash: hash, transactionIndex: 0, removed: false,
      }],
    });
    ledger.push({ transaction: hash, from: viem.getAddress(from), to: viem.getAddress(to), value: value.toString(), nonce: String(nonce), asset: token });
    return hash;
  }

  // The upto proxy's settle(permit, amount, owner, witness, signature), as Permit2
  // and the proxy check it: only the witness's facilitator sends it, never more than
  // the permitted amount, within the window, once per nonce, with the owner's
  // signature over the witness, its allowance to Permit2 and its balance.
  async function uptoSettle(args, sender, send) {
    const [permit, amount, owner, witness, signature] = args;
    const now = BigInt(Math.floor(Date.now() / 1000));
    if (!viem.isAddressEqual(sender, witness.facilitator)) throw new Revert("UnauthorizedFacilitator");
    if (!viem.isAddressEqual(permit.permitted.token, token)) throw new Revert("the fake chain holds one token");
    if (BigInt(amount) > BigInt(permit.permitted.amount)) throw new Revert("AmountExceedsPermitted");
    if (now < BigInt(witness.validAfter)) throw new Revert("PaymentTooEarly");
    if (now > BigInt(permit.deadline)) throw new Revert("SignatureExpired");
    const k = `${viem.getAddress(owner)}|${BigInt(permit.nonce)}`;
    if (permit2Used.has(k)) throw new Revert("InvalidNonce");
    const ok = await viem.verifyTypedData({
      address: owner,
      domain: { name: "Permit2", chainId, verifyingContract: PERMIT2 },
      types: uptoWitnessTypes,
      primaryType: "PermitWitnessTransferFrom",
      message: { permitted: permit.permitted, spender: UPTO_PROXY, nonce: BigInt(permit.nonce), deadline: BigInt(permit.deadline), witness },
      signature,
    }).catch(() => false);
    if (!ok) throw new Revert("InvalidSigner");
    if ((allowances.get(viem.getAddress(owner)) ?? 0n) < BigInt(amount)) throw new Revert("TRANSFER_FROM_FAILED: allowance");
    if (balanceOf(owner) < BigInt(amount)) throw new Revert("TRANSFER_FROM_FAILED: balance");
    if (!send) return undefined;
    permit2Used.add(k);
    allowances.set(viem.getAddress(owner), allowances.get(viem.getAddress(owner)) - BigInt(amount));
    const input = viem.encodeFunctionData({ abi: uptoProxyABI, functionName: "settle", args });
    return move(owner, witness.to, BigInt(amount), BigInt(permit.nonce), input);
  }

  // nonceBitmap is Permit2's word wordPos of owner's used nonces.
  function nonceBitmap(owner, wordPos) {
    let bits = 0n;
    for (const k of permit2Used) {
      const [o, n] = k.split("|");
      if (viem.isAddressEqual(o, owner) && BigInt(n) >> 8n === BigInt(wordPos)) bits |= 1n << (BigInt(n) & 255n);
    }
    return bits;
  }

  // A call of the contract by name; a revert is thrown.
  async function call(functionName, args = [], send = false) {
    switch (functionName) {
      case "balanceOf": return balanceOf(args[0]);
      case "name": return name;
      case "version": return version;
      case "decimals": return 6;
      case "authorizationState": return used.has(key(args[0], args[1]));
      case "allowance": return viem.isAddressEqual(args[1], PERMIT2) ? allowances.get(viem.getAddress(args[0])) ?? 0n : 0n;
      case "transferWithAuthorization": return transferWithAuthorization(args, send);
      default: throw new Revert(`the token has no function ${functionName}`);
    }
  }

  const isToken = (address) => viem.isAddressEqual(address, token);
  const isProxy = (address) => viem.isAddressEqual(address, UPTO_PROXY);

  const client = {
    chain: { id: chainId, name: "fake", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [] } } },
    account: { address: facilitator, type: "json-rpc" },
    getAddresses: () => [facilitator],
    async getCode({ address }) {
      return isToken(address) || isProxy(address) || viem.isAddressEqual(address, PERMIT2) || viem.isAddressEqual(address, MULTICALL3)
        ? "0x6080604052" : undefined;
    },
    async verifyTypedData(args) {
      return viem.verifyTypedData(args);
    },
    async readContract({ address, functionName, args }) {
      if (viem.isAddressEqual(address, MULTICALL3) && functionName === "tryAggregate") {
        const [requireSuccess, calls] = args;
        const out = [];
        for (const { target, callData } of calls) {
          try {
            if (!isToken(target)) throw new Revert("no contract at " + target);
            const { functionName: fn, args: a } = viem.decodeFunctionData({ abi: tokenABI, data: callData });
            const result = await call(fn, a ?? []);
            const returnData = fn === "transferWithAuthorization" ? "0x" : viem.encodeFunctionResult({ abi: tokenABI, functionName: fn, result });
            out.push({ success: true, returnData });
          } catch (err) {
            if (requireSuccess) throw err;
            out.push({ success: false, returnData: "0x" });
          }
        }
        return out;
      }
      if (isProxy(address) && functionName === "settle") return uptoSettle(args, facilitator, false);
      if (isProxy(address) && functionName === "PERMIT2") return PERMIT2;
      if (!isToken(address)) throw new Revert("no contract at " + address);
      return call(functionName, args ?? []);
    },
    async simulateContract({ address, functionName, args }) {
      if (!isToken(address)) throw new Revert("no contract at " + address);
      return { result: await call(functionName, args ?? []), request: { address, functionName, args } };
    },
    async writeContract({ address, functionName, args }) {
      if (isProxy(address) && functionName === "settle") return uptoSettle(args, facilitator, true);
      if (!isToken(address) || functionName !== "transferWithAuthorization") {
        throw new Error(`the fake chain only sends the token's transferWithAuthorization, not ${functionName} to ${address}`);
      }
      return call(functionName, args, true);
    },
    async sendTransaction() {
      throw new Error("the fake chain deploys no contracts");
    },
    async waitForTransactionReceipt({ hash }) {
      const r = receipts.get(hash);
      if (!r) throw new Error(`no transaction ${hash}`);
      return r;
    },
  };
  // rpc answers a node's JSON-RPC for the token: eth_call of its view functions
  // (authorizationState above all) and of Permit2's nonceBitmap, and the reads of
  // blocks, transactions, receipts and logs (eth_getLogs over at most 10000 blocks,
  // as public nodes bound it), so that the service can settle from the chain a
  // payment whose seller's answer said otherwise, and read what it moved.
  async function rpc({ id, method, params }) {
    try {
      if (method === "eth_chainId") return { jsonrpc: "2.0", id, result: viem.toHex(chainId) };
      const read = reads[method];
      if (read) return { jsonrpc: "2.0", id, result: read(...(params ?? [])) };
      if (method !== "eth_call") throw Object.assign(new Error(`the fake chain does not answer ${method}`), { code: -32601 });
      const { to, input, data } = params[0];
      if (viem.isAddressEqual(to, PERMIT2)) {
        const { functionName, args } = viem.decodeFunctionData({ abi: permit2ABI, data: input ?? data });
        const result = nonceBitmap(...args);
        return { jsonrpc: "2.0", id, result: viem.encodeFunctionResult({ abi: permit2ABI, functionName, result }) };
      }
      if (!isToken(to)) throw new Revert("no contract at " + to);
      const { functionName, args } = viem.decodeFunctionData({ abi: tokenABI, data: input ?? data });
      if (functionName === "transferWithAuthorization") throw new Revert("eth_call sends nothing");
      const result = await call(functionName, args ?? []);
      return { jsonrpc: "2.0", id, result: viem.encodeFunctionResult({ abi: tokenABI, functionName, result }) };
    } catch (e) {
      return { jsonrpc: "2.0", id, error: { code: e.code ?? 3, message: e.message } };
    }
  }
  // reads answer what a node answers of the chain's blocks, transactions, receipts
  // and logs, in its hex quantities; null for what it does not know.
  const rpcLog = (l) => ({ ...l, blockNumber: viem.toHex(l.blockNumber), logIndex: viem.toHex(l.logIndex), transactionIndex: "0x0" });
  const matches = (want, got) => want == null || (Array.isArray(want) ? want : [want]).some((w) => w.toLowerCase() === got?.toLowerCase());
  const reads = {
    eth_blockNumber: () => viem.toHex(block),
    eth_getBlockByNumber: (tag) => {
      const n = tag === "latest" ? block : BigInt(tag);
      return n > block || n < 0n ? null : { number: viem.toHex(n), timestamp: viem.toHex(timestampOf(n)), transactions: [] };
    },
    eth_getTransactionByHash: (hash) => {
      const t = transactions.get(hash?.toLowerCase());
      return t ? { hash, from: facilitator, to: t.to, input: t.input, blockNumber: viem.toHex(t.block), value: "0x0" } : null;
    },
    eth_getTransactionReceipt: (hash) => {
      const r = receipts.get(hash?.toLowerCase());
      return r ? { ...r, status: "0x1", blockNumber: viem.toHex(r.blockNumber), logs: r.logs.map(rpcLog) } : null;
    },
    eth_getLogs: ({ address, fromBlock, toBlock, topics = [] }) => {
      const from = BigInt(fromBlock ?? "0x0"), to = toBlock === undefined || toBlock === "latest" ? block : BigInt(toBlock);
      if (to - from >= 10_000n) throw Object.assign(new Error("query exceeds the 10000 blocks this node answers"), { code: -32005 });
      return [...receipts.values()].flatMap((r) => r.logs).filter((l) =>
        l.blockNumber >= from && l.blockNumber <= to && matches(address, l.address) &&
        topics.every((t, i) => matches(t, l.topics[i]))).map(rpcLog);
    },
  };
  // approvePermit2 stands for owner's own approve(Permit2, max) transaction on the
  // token: the one-time step the upto scheme needs of a payer.
  const approvePermit2 = (owner) => allowances.set(viem.getAddress(owner), (1n << 256n) - 1n);
  return { client, ledger, rpc, approvePermit2 };
}
