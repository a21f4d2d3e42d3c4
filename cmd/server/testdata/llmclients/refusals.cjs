// The official OpenAI and Anthropic clients against the LLM proxy whose upstream
// refuses: an unknown model (404), a context too long (400, its message quoting a
// protected value) and a rate limit (429, with Retry-After and retry-after-ms), each
// read as the client reads its provider's error; and Anthropic's client with the
// key in both of its headers. It writes what the clients read as one JSON object.
// Environment: WAYSTATION_API (the API's base URL), AGENT_KEY, USER_KEY.
'use strict';
const OpenAI = require('openai');
const Anthropic = require('@anthropic-ai/sdk');

const { env } = require('./common.cjs');

// read runs call and records the API error it throws: its class, status, type,
// message, the request id the client read, and the headers that say when to retry;
// and how long the call took, retries included.
async function read(call) {
  const start = Date.now();
  try {
    await call();
    return { thrown: false };
  } catch (e) {
    const h = (name) => e.headers?.get(name) ?? null;
    return { thrown: true, name: e.constructor.name, status: e.status, type: e.type ?? e.error?.error?.type ?? null,
      message: e.message, requestID: e.requestID ?? null, retryAfter: h('retry-after'), retryAfterMs: h('retry-after-ms'),
      remaining: h('x-ratelimit-remaining-requests') ?? h('anthropic-ratelimit-requests-remaining'), ms: Date.now() - start };
  }
}

async function main() {
  const out = { openai: {}, anthropic: {} };
  const openai = new OpenAI({ apiKey: env.AGENT_KEY, baseURL: env.WAYSTATION_API + '/llm/v1', maxRetries: 0 });
  const chat = (client, model) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
  out.openai.missing = await read(() => chat(openai, 'missing'));
  out.openai.long = await read(() => chat(openai, 'long'));
  out.openai.busy = await read(() => chat(new OpenAI({ apiKey: env.AGENT_KEY, baseURL: env.WAYSTATION_API + '/llm/v1', maxRetries: 1 }), 'busy'));

  const anthropic = new Anthropic({ apiKey: env.AGENT_KEY, baseURL: env.WAYSTATION_API + '/llm', maxRetries: 0 });
  const message = (client, model) => client.messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
  out.anthropic.missing = await read(() => message(anthropic, 'missing'));
  out.anthropic.long = await read(() => message(anthropic, 'long'));
  out.anthropic.busy = await read(() => message(new Anthropic({ apiKey: env.AGENT_KEY, baseURL: env.WAYSTATION_API + '/llm', maxRetries: 1 }), 'busy'));
  // An answer's request id, as the client reads it.
  const ok = await message(anthropic, 'echo');
  out.anthropic.answerRequestID = ok._request_id ?? null;
  // The key in x-api-key and as a Bearer key, as older clients send it when both of
  // their keys are set (this one refuses both options, so the Bearer key goes as a
  // default header): the same key is taken; two different keys are refused.
  // What went, as the client sent it: both headers, each named once.
  const sent = [];
  const fetch = (url, init) => {
    const h = new Headers(init.headers);
    sent.push({ apiKey: h.get('x-api-key') !== null, bearer: (h.get('authorization') ?? '').startsWith('Bearer ') });
    return globalThis.fetch(url, init);
  };
  const withBearer = (key) => new Anthropic({ authToken: key, baseURL: env.WAYSTATION_API + '/llm', maxRetries: 0, fetch,
    defaultHeaders: { 'X-Api-Key': env.AGENT_KEY } });
  out.anthropic.bothKeys = (await message(withBearer(env.AGENT_KEY), 'echo')).content[0].text;
  const two = withBearer(env.USER_KEY);
  out.anthropic.twoKeys = await read(() => message(two, 'echo'));
  out.anthropic.sent = sent;
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
