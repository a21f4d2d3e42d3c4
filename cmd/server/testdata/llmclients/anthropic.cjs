// The official Anthropic client against the LLM proxy's Messages route: whole,
// streamed and calling a tool, and errors. It writes what the client read as one JSON
// object. Environment: WAYSTATION_API (the API's base URL), AGENT_KEY, SESSION_ID,
// FORMS (a JSON array of protected values as written).
'use strict';
const Anthropic = require('@anthropic-ai/sdk');

const common = require('./common.cjs');

const { env, form } = common;
// The code the client's error carries.
const caught = (call) => common.caught(call, (e) => e.error?.error?.code);

const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

async function main() {
  // The agent's key as Anthropic's clients send it: x-api-key.
  const client = new Anthropic({
    apiKey: env.AGENT_KEY, baseURL: env.WAYSTATION_API + '/llm', maxRetries: 0,
    defaultHeaders: { 'X-Session-Id': env.SESSION_ID },
  });
  const out = {};
  const tools = [{ name: 'pay', description: `pays with ${form()}`,
    input_schema: { type: 'object', properties: { code: { type: 'string', description: `e.g. ${form()}` } } } }];
  const messages = [{ role: 'user', content: `Pay with ${form()}.` },
    { role: 'assistant', content: [{ type: 'text', text: `Which code, ${form()}?` }] },
    { role: 'user', content: [{ type: 'text', text: `Yes, ${form()}.` }] }];
  const system = [{ type: 'text', text: `The code is ${form()}.` }];

  const m = await client.messages.create({ model: 'echo', max_tokens: 256, system, messages, metadata: { user_id: form() } });
  out.messages = text(m);
  const stream = client.messages.stream({ model: 'echo', max_tokens: 256, system: `Never say ${form()}.`, messages });
  let deltas = '';
  stream.on('text', (t) => { deltas += t; });
  const final = await stream.finalMessage();
  out.messagesStream = { text: text(final), deltas, stop: final.stop_reason };
  const asked = await client.messages.create({ model: 'echo', max_tokens: 256, messages, tools });
  const use = asked.content.find((b) => b.type === 'tool_use');
  out.messagesToolCall = { name: use.name, input: use.input, stop: asked.stop_reason };
  const answered = await client.messages.create({ model: 'echo', max_tokens: 256, tools, messages: [...messages,
    { role: 'assistant', content: asked.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: `paid with ${form()}` }] }] }] });
  out.messagesToolResult = text(answered);
  const streamedCall = await client.messages.stream({ model: 'echo', max_tokens: 256, messages, tools }).finalMessage();
  const su = streamedCall.content.find((b) => b.type === 'tool_use');
  out.messagesStreamToolCall = { name: su.name, input: su.input };

  // Errors the client reads as API errors with the proxy's message and code.
  out.protectedModel = await caught(() => client.messages.create({ model: form(), max_tokens: 8, messages }));
  out.notText = await caught(() => client.messages.create({ model: 'echo', max_tokens: 8,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] }));
  const lost = new Anthropic({ apiKey: env.AGENT_KEY, baseURL: env.WAYSTATION_API + '/llm', maxRetries: 0,
    defaultHeaders: { 'X-Session-Id': '00000000-0000-4000-8000-000000000000' } });
  out.unknownSession = await caught(() => lost.messages.create({ model: 'echo', max_tokens: 8, messages }));
  const stranger = new Anthropic({ apiKey: 'sk_agent_nottherightlength', baseURL: env.WAYSTATION_API + '/llm', maxRetries: 0 });
  out.badKey = await caught(() => stranger.messages.create({ model: 'echo', max_tokens: 8, messages }));
  // The agent's key as a Bearer key works too.
  const bearer = new Anthropic({ authToken: env.AGENT_KEY, apiKey: null, baseURL: env.WAYSTATION_API + '/llm', maxRetries: 0 });
  out.bearer = text(await bearer.messages.create({ model: 'echo', max_tokens: 8, messages: [{ role: 'user', content: 'hello' }] }));
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
