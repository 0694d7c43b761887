// A small tool-using agent written with the official `openai` npm package, as users
// write them: it knows nothing of Chassis Inspector (the proxy reaches it through
// OPENAI_BASE_URL). It runs its own `lookup` tool and prints the final answer.
// Usage: node agent.mjs [--stream] [--prompt TEXT]
import OpenAI from "openai";

const args = process.argv.slice(2);
const stream = args.includes("--stream");
const prompt = args.includes("--prompt") ? args[args.indexOf("--prompt") + 1] : "weather";
const client = new OpenAI({ maxRetries: 2 });
const tools = [
  {
    type: "function",
    function: {
      name: "lookup",
      description: "Look a word up in the notes.",
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    },
  },
];
const messages = [
  { role: "system", content: "You look things up." },
  { role: "user", content: prompt },
];

for (let turn = 0; turn < 8; turn++) {
  let content = null;
  let calls = [];
  if (stream) {
    const s = await client.chat.completions.create({ model: "gpt-test", messages, tools, temperature: 0, stream: true });
    const byIndex = {};
    let text = "";
    for await (const chunk of s) {
      for (const ch of chunk.choices) {
        if (ch.delta.content) text += ch.delta.content;
        for (const tc of ch.delta.tool_calls ?? []) {
          const cur = (byIndex[tc.index] ??= { id: "", name: "", arguments: "" });
          if (tc.id) cur.id = tc.id;
          if (tc.function?.name) cur.name = tc.function.name;
          if (tc.function?.arguments) cur.arguments += tc.function.arguments;
        }
      }
    }
    content = text || null;
    calls = Object.keys(byIndex).sort().map((k) => byIndex[k]);
  } else {
    const r = await client.chat.completions.create({ model: "gpt-test", messages, tools, temperature: 0 });
    const m = r.choices[0].message;
    content = m.content;
    calls = (m.tool_calls ?? []).map((tc) => ({ id: tc.id, name: tc.function.name, arguments: tc.function.arguments }));
  }
  if (calls.length === 0) {
    console.log(content ?? "");
    process.exit(0);
  }
  messages.push({
    role: "assistant",
    content,
    tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })),
  });
  for (const c of calls) {
    const q = JSON.parse(c.arguments).query;
    messages.push({ role: "tool", tool_call_id: c.id, content: `no note for ${q}` });
  }
}
console.log("gave up");
