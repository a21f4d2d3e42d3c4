// The official OpenAI client against the LLM proxy: chat completions and the
// Responses API, whole, streamed and calling a tool, and errors. It writes what the
// client read as one JSON object. Environment: WAYSTATION_API (the API's base URL),
// AGENT_KEY, SESSION_ID, FORMS (a JSON array of protected values as written).
'use strict';
const OpenAI = require('openai');

const common = require('./common.cjs');

const { env, form } = common;
// The code the client's error carries.
const caught = (call) => common.caught(call, (e) => e.code);

async function main() {
  const client = new OpenAI({
    apiKey: env.AGENT_KEY, baseURL: env.WAYSTATION_API + '/llm/v1', maxRetries: 0,
    defaultHeaders: { 'X-Session-Id': env.SESSION_ID },
  });
  const out = {};
  const tools = [{ type: 'function', function: { name: 'pay', description: `pays with ${form()}`,
    parameters: { type: 'object', properties: { code: { type: 'string', description: `e.g. ${form()}` } } } } }];

  // Chat completions.
  const messages = [{ role: 'system', content: `The code is ${form()}.` }, { role: 'user', content: `Pay with ${form()}.` }];
  const chat = await client.chat.completions.create({ model: 'echo', messages });
  out.chat = chat.choices[0].message.content;
  let streamed = '';
  for await (const chunk of await client.chat.completions.create({ model: 'echo', messages, stream: true })) {
    streamed += chunk.choices[0]?.delta?.content ?? '';
  }
  out.chatStream = streamed;
  const asked = await client.chat.completions.create({ model: 'echo', messages, tools });
  const call = asked.choices[0].message.tool_calls[0];
  out.chatToolCall = { name: call.function.name, arguments: JSON.parse(call.function.arguments) };
  const answered = await client.chat.completions.create({ model: 'echo', tools, messages: [...messages, asked.choices[0].message,
    { role: 'tool', tool_call_id: call.id, content: `paid with ${form()}` }] });
  out.chatToolResult = answered.choices[0].message.content;
  const streamedCall = await client.chat.completions.stream({ model: 'echo', messages, tools }).finalChatCompletion();
  const sc = streamedCall.choices[0].message.tool_calls[0];
  out.chatStreamToolCall = { name: sc.function.name, arguments: JSON.parse(sc.function.arguments) };

  // The Responses API.
  const rtools = [{ type: 'function', name: 'pay', description: `pays with ${form()}`, strict: false,
    parameters: { type: 'object', properties: { code: { type: 'string' } } } }];
  const input = [{ role: 'user', content: `Pay with ${form()}.` },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: `The code is ${form()}.` }] }];
  const r = await client.responses.create({ model: 'echo', instructions: `Never say ${form()}.`, input, metadata: { note: form() } });
  out.responses = r.output_text;
  const rs = client.responses.stream({ model: 'echo', input });
  let deltas = '';
  rs.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const final = await rs.finalResponse();
  out.responsesStream = { text: final.output_text, deltas };
  const rasked = await client.responses.create({ model: 'echo', input, tools: rtools });
  const fc = rasked.output.find((o) => o.type === 'function_call');
  out.responsesToolCall = { name: fc.name, arguments: JSON.parse(fc.arguments) };
  const ranswered = await client.responses.create({ model: 'echo', tools: rtools, input: [...input, fc,
    { type: 'function_call_output', call_id: fc.call_id, output: `paid with ${form()}` }] });
  out.responsesToolResult = ranswered.output_text;
  const rstreamedCall = await client.responses.stream({ model: 'echo', input, tools: rtools }).finalResponse();
  const rsc = rstreamedCall.output.find((o) => o.type === 'function_call');
  out.responsesStreamToolCall = { name: rsc.name, arguments: JSON.parse(rsc.arguments) };

  // Errors the client reads as API errors with the proxy's message and code.
  out.chatProtectedModel = await caught(() => client.chat.completions.create({ model: form(), messages }));
  out.responsesProtectedModel = await caught(() => client.responses.create({ model: form(), input: 'hi' }));
  out.responsesNotText = await caught(() => client.responses.create({ model: 'echo',
    input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' }] }] }));
  const lost = new OpenAI({ apiKey: env.AGENT_KEY, baseURL: env.WAYSTATION_API + '/llm/v1', maxRetries: 0,
    defaultHeaders: { 'X-Session-Id': '00000000-0000-4000-8000-000000000000' } });
  out.unknownSession = await caught(() => lost.responses.create({ model: 'echo', input: 'hi' }));
  const stranger = new OpenAI({ apiKey: 'sk_agent_nottherightlength', baseURL: env.WAYSTATION_API + '/llm/v1', maxRetries: 0 });
  out.badKey = await caught(() => stranger.chat.completions.create({ model: 'echo', messages }));
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
