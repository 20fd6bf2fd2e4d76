// Runs the SDKs handler authors use against fleet-worker's model gateway and prints one
// JSON object: case name -> what the client saw. The Go test
// (cmd/fleet-worker/gateway_clients_test.go) starts `fleet-worker gateway` in front of
// scripted upstreams, runs this with the exports it printed, and checks every case.
// The user message is the upstream's script: "plain", "spend", "ratelimit", "down", ...
import OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText, generateObject, jsonSchema, stepCountIs, tool } from "ai";
import { z } from "zod";
import {
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
} from "@aws-sdk/client-bedrock-runtime";

const env = process.env;
const openai = new OpenAI({ baseURL: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY });
const aiOpenAI = createOpenAI({ baseURL: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY });
// Default HTTP handler (HTTP/2); the token comes from AWS_BEARER_TOKEN_BEDROCK.
const bedrock = new BedrockRuntimeClient({ region: "us-east-1", endpoint: env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME });

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const user = (text) => [{ role: "user", content: text }];

function failure(e) {
  return {
    error: {
      name: e?.name,
      status: e?.status ?? e?.statusCode ?? e?.$metadata?.httpStatusCode,
      code: e?.code ?? e?.error?.code,
      attempts: e?.$metadata?.attempts,
      message: String(e?.message ?? e).slice(0, 300),
      text: e?.text,
    },
  };
}

const cases = {
  async oa_plain() {
    const r = await openai.chat.completions.create({ model: "gpt", messages: user("plain") });
    return { text: r.choices[0].message.content, finish: r.choices[0].finish_reason, usage: r.usage };
  },
  async oa_stream() {
    const s = await openai.chat.completions.create({
      model: "gpt", messages: user("plain"), stream: true, stream_options: { include_usage: true },
    });
    let text = "", finish, usage, chunks = 0;
    for await (const c of s) {
      chunks++;
      if (c.usage) usage = c.usage;
      for (const ch of c.choices) {
        text += ch.delta?.content ?? "";
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
    return { text, finish, usage, chunks };
  },
  async oa_tools() {
    const r = await openai.chat.completions.create({ model: "gpt", messages: user("tool"), tools: [weatherTool], tool_choice: "required" });
    const m = r.choices[0].message;
    return { finish: r.choices[0].finish_reason, tool: m.tool_calls?.[0]?.function?.name, args: m.tool_calls?.[0]?.function?.arguments };
  },
  async oa_stream_tools() {
    const s = await openai.chat.completions.create({ model: "gpt", messages: user("tool"), tools: [weatherTool], stream: true });
    let tool = "", args = "", finish;
    for await (const c of s) {
      for (const ch of c.choices) {
        for (const tc of ch.delta?.tool_calls ?? []) {
          tool += tc.function?.name ?? "";
          args += tc.function?.arguments ?? "";
        }
        if (ch.finish_reason) finish = ch.finish_reason;
      }
    }
    return { tool, args, finish };
  },
  async oa_json() {
    const r = await openai.chat.completions.create({
      model: "gpt", messages: user("json"),
      response_format: { type: "json_schema", json_schema: { name: "weather", strict: true,
        schema: { type: "object", properties: { city: { type: "string" }, temp: { type: "number" } }, required: ["city", "temp"], additionalProperties: false } } },
    });
    return { object: JSON.parse(r.choices[0].message.content) };
  },
  async oa_parallel_tool_results() {
    // Two tool results in a row to a Bedrock target: one user message upstream.
    const r = await openai.chat.completions.create({
      model: "claude", tools: [weatherTool],
      messages: [
        { role: "user", content: "parallel" },
        { role: "assistant", content: null, tool_calls: [
          { id: "a", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
          { id: "b", type: "function", function: { name: "get_weather", arguments: '{"city":"Bergen"}' } }] },
        { role: "tool", tool_call_id: "a", content: "3C" },
        { role: "tool", tool_call_id: "b", content: "5C" },
      ],
    });
    return { text: r.choices[0].message.content };
  },
  async oa_stream_midfail() {
    let text = "";
    try {
      const s = await openai.chat.completions.create({ model: "gpt", messages: user("midfail"), stream: true });
      for await (const c of s) for (const ch of c.choices) text += ch.delta?.content ?? "";
      return { text };
    } catch (e) {
      return { text, ...failure(e) };
    }
  },
};
for (const c of ["spend", "ratelimit", "retryafter", "down", "ctx-openai", "ctx-vllm", "ctx-anthropic"]) {
  cases["oa_" + c] = async () => {
    try {
      const r = await openai.chat.completions.create({ model: "gpt", messages: user(c) });
      return { text: r.choices[0].message.content };
    } catch (e) {
      return failure(e);
    }
  };
}

Object.assign(cases, {
  async ai_generateText() {
    const r = await generateText({ model: aiOpenAI.chat("gpt"), prompt: "plain" });
    return { text: r.text, finish: r.finishReason, usage: r.usage };
  },
  async ai_streamText() {
    const r = streamText({ model: aiOpenAI.chat("gpt"), prompt: "plain" });
    let text = "";
    for await (const t of r.textStream) text += t;
    return { text, finish: await r.finishReason, usage: await r.usage };
  },
  async ai_generateObject() {
    const r = await generateObject({ model: aiOpenAI.chat("gpt"), prompt: "json", schema: z.object({ city: z.string(), temp: z.number() }) });
    return { object: r.object };
  },
  async ai_generateObject_bedrock() {
    // A Bedrock target answers response_format through a forced tool.
    const r = await generateObject({ model: aiOpenAI.chat("claude"), prompt: "json", schema: z.object({ city: z.string(), temp: z.number() }) });
    return { object: r.object };
  },
});

// The Responses API (POST /v1/responses): the openai SDK's responses.create and the AI
// SDK's default provider, openai("model"), against both kinds of target.
const responsesTool = { type: "function", ...weatherTool.function };
async function responsesStream(params) {
  const s = await openai.responses.create({ ...params, stream: true });
  let text = "", args = "", model, final, types = [], seq = [];
  for await (const ev of s) {
    types.push(ev.type);
    seq.push(ev.sequence_number);
    if (ev.type === "response.created") model = ev.response.model;
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.function_call_arguments.delta") args += ev.delta;
    if (ev.type === "response.completed" || ev.type === "response.incomplete" || ev.type === "response.failed") final = ev.response;
  }
  const inOrder = seq.every((n, i) => n === i);
  return { text, args, model, status: final?.status, usage: final?.usage, output: final?.output?.map((o) => o.type).join(","),
    first: types[0], last: types[types.length - 1], inOrder, types: [...new Set(types)].join(",") };
}
for (const model of ["gpt", "claude"]) {
  cases["oa_responses_" + model] = async () => {
    const r = await openai.responses.create({ model, input: "plain", instructions: "be brief" });
    return { text: r.output_text, status: r.status, model: r.model, usage: r.usage, object: r.object, store: r.store };
  };
  cases["oa_responses_stream_" + model] = () => responsesStream({ model, input: [{ role: "user", content: "plain" }] });
  cases["oa_responses_tools_" + model] = async () => {
    const r = await openai.responses.create({ model, input: "tool", tools: [responsesTool], tool_choice: "required" });
    const fc = r.output.find((o) => o.type === "function_call");
    return { tool: fc?.name, args: fc?.arguments, callId: fc?.call_id };
  };
  cases["oa_responses_stream_tools_" + model] = () => responsesStream({ model, input: "tool", tools: [responsesTool] });
  cases["oa_responses_json_" + model] = async () => {
    const r = await openai.responses.create({
      model, input: "json",
      text: { format: { type: "json_schema", name: "weather", strict: true,
        schema: { type: "object", properties: { city: { type: "string" }, temp: { type: "number" } }, required: ["city", "temp"], additionalProperties: false } } },
    });
    return { object: JSON.parse(r.output_text) };
  };
}
Object.assign(cases, {
  async oa_responses_tool_result() {
    // A whole tool round trip in one stateless request: the call and its output as input items.
    const r = await openai.responses.create({
      model: "claude", tools: [responsesTool],
      input: [
        { role: "user", content: "parallel" },
        { type: "function_call", call_id: "a", name: "get_weather", arguments: '{"city":"Oslo"}' },
        { type: "function_call", call_id: "b", name: "get_weather", arguments: '{"city":"Bergen"}' },
        { type: "function_call_output", call_id: "a", output: "3C" },
        { type: "function_call_output", call_id: "b", output: "5C" },
      ],
    });
    return { text: r.output_text };
  },
  async oa_responses_stream_helper() {
    // The SDK's stream helper rebuilds the response from the events (output_index and
    // content_index must point at what was added).
    const text = await openai.responses.stream({ model: "gpt", input: "plain" }).finalResponse();
    const tools = await openai.responses.stream({ model: "claude", input: "tool", tools: [responsesTool] }).finalResponse();
    return { text: text.output_text, args: tools.output.find((o) => o.type === "function_call")?.arguments };
  },
  async oa_responses_parse() {
    const r = await openai.responses.parse({ model: "claude", input: "json",
      text: { format: zodTextFormat(z.object({ city: z.string(), temp: z.number() }), "weather") } });
    return { object: r.output_parsed };
  },
  async oa_responses_previous() {
    try {
      await openai.responses.create({ model: "gpt", input: "plain", previous_response_id: "resp_123" });
      return {};
    } catch (e) {
      return failure(e);
    }
  },
  async oa_responses_store() {
    try {
      await openai.responses.create({ model: "gpt", input: "plain", store: true });
      return {};
    } catch (e) {
      return failure(e);
    }
  },
  async oa_responses_stream_midfail() {
    let text = "";
    try {
      const s = await openai.responses.create({ model: "gpt", input: "midfail", stream: true });
      for await (const ev of s) if (ev.type === "response.output_text.delta") text += ev.delta;
      return { text };
    } catch (e) {
      return { text, ...failure(e) };
    }
  },
  async ai_responses_generateText() {
    const r = await generateText({ model: aiOpenAI("gpt"), prompt: "plain" });
    return { text: r.text, finish: r.finishReason, usage: r.usage, modelId: r.response?.modelId };
  },
  async ai_responses_streamText() {
    const r = streamText({ model: aiOpenAI("gpt"), prompt: "plain" });
    let text = "";
    for await (const t of r.textStream) text += t;
    return { text, finish: await r.finishReason, usage: await r.usage };
  },
  async ai_responses_streamText_bedrock() {
    const r = streamText({ model: aiOpenAI("claude"), prompt: "plain" });
    let text = "";
    for await (const t of r.textStream) text += t;
    return { text, finish: await r.finishReason, usage: await r.usage };
  },
  async ai_responses_generateObject() {
    const r = await generateObject({ model: aiOpenAI("gpt"), prompt: "json", schema: z.object({ city: z.string(), temp: z.number() }) });
    return { object: r.object };
  },
  async ai_responses_tools() {
    const r = await generateText({ model: aiOpenAI("gpt"), prompt: "tool",
      tools: { get_weather: { description: "Current weather in a city", inputSchema: jsonSchema(weatherTool.function.parameters) } } });
    return { tool: r.toolCalls[0]?.toolName, args: r.toolCalls[0]?.input, finish: r.finishReason };
  },
});

// Answer fields besides the message ("logprobs": the upstream adds logprobs, a
// system_fingerprint, a service_tier and usage details), as each SDK exposes them.
Object.assign(cases, {
  async oa_logprobs() {
    const r = await openai.chat.completions.create({ model: "gpt", messages: user("logprobs"), logprobs: true, top_logprobs: 1 });
    return { tokens: r.choices[0].logprobs?.content?.map((t) => t.token).join("|"), fingerprint: r.system_fingerprint,
      tier: r.service_tier, model: r.model, usage: r.usage };
  },
  async oa_stream_logprobs() {
    const s = await openai.chat.completions.create({ model: "gpt", messages: user("logprobs"), logprobs: true, top_logprobs: 1,
      stream: true, stream_options: { include_usage: true } });
    const tokens = [], models = new Set(), fingerprints = new Set();
    let usage;
    for await (const c of s) {
      models.add(c.model);
      fingerprints.add(c.system_fingerprint);
      if (c.usage) usage = c.usage;
      for (const ch of c.choices) for (const t of ch.logprobs?.content ?? []) tokens.push(t.token);
    }
    return { tokens: tokens.join("|"), models: [...models].join(","), fingerprints: [...fingerprints].join(","), usage };
  },
  async oa_responses_logprobs() {
    const r = await openai.responses.create({ model: "gpt", input: "logprobs", include: ["message.output_text.logprobs"], top_logprobs: 1 });
    return { tokens: r.output[0]?.content?.[0]?.logprobs?.map((t) => t.token).join("|"), tier: r.service_tier, usage: r.usage };
  },
  async ai_responses_logprobs() {
    const r = await generateText({ model: aiOpenAI("gpt"), prompt: "logprobs", providerOptions: { openai: { logprobs: 1 } } });
    return { tokens: r.providerMetadata?.openai?.logprobs?.flat().map((t) => t.token).join("|"),
      tier: r.providerMetadata?.openai?.serviceTier, usage: r.usage };
  },
  async ai_responses_stream_logprobs() {
    const r = streamText({ model: aiOpenAI("gpt"), prompt: "logprobs", providerOptions: { openai: { logprobs: 1 } } });
    for await (const _ of r.textStream);
    const meta = await r.providerMetadata;
    return { tokens: meta?.openai?.logprobs?.flat().map((t) => t.token).join("|"), tier: meta?.openai?.serviceTier };
  },
});

// A tool loop through the stateless gateway: with store: false the AI SDK sends each step
// the whole conversation; with its default (store on) it sends an item_reference, refused.
const weatherTools = { get_weather: tool({ description: "Current weather in a city", inputSchema: jsonSchema(weatherTool.function.parameters),
  execute: async ({ city }) => `3C in ${city}` }) };
Object.assign(cases, {
  async ai_responses_tool_loop() {
    const r = await generateText({ model: aiOpenAI("gpt"), prompt: "toolloop", tools: weatherTools, stopWhen: stepCountIs(3),
      providerOptions: { openai: { store: false } } });
    return { text: r.text, steps: r.steps.length };
  },
  async ai_responses_tool_loop_stored() {
    try {
      await generateText({ model: aiOpenAI("gpt"), prompt: "toolloop", tools: weatherTools, stopWhen: stepCountIs(3) });
      return {};
    } catch (e) {
      return failure(e);
    }
  },
});

const converseMessages = (text) => [{ role: "user", content: [{ text }] }];
const converseTools = { tools: [{ toolSpec: { name: "get_weather", inputSchema: { json: weatherTool.function.parameters } } }] };
async function converseStream(input) {
  const r = await bedrock.send(new ConverseStreamCommand(input));
  let text = "", toolInput = "", tool, stop, usage;
  for await (const ev of r.stream) {
    if (ev.contentBlockStart?.start?.toolUse) tool = ev.contentBlockStart.start.toolUse.name;
    if (ev.contentBlockDelta?.delta?.text) text += ev.contentBlockDelta.delta.text;
    if (ev.contentBlockDelta?.delta?.toolUse) toolInput += ev.contentBlockDelta.delta.toolUse.input;
    if (ev.messageStop) stop = ev.messageStop.stopReason;
    if (ev.metadata) usage = ev.metadata.usage;
  }
  return { text, tool, toolInput, stop, usage };
}
for (const model of ["claude", "gpt"]) {
  cases["br_converse_" + model] = async () => {
    const r = await bedrock.send(new ConverseCommand({ modelId: model, messages: converseMessages("plain"), inferenceConfig: { maxTokens: 50, topP: 0.9, stopSequences: ["END"] } }));
    return { text: r.output.message.content[0].text, stop: r.stopReason, usage: r.usage };
  };
  cases["br_stream_" + model] = () => converseStream({ modelId: model, messages: converseMessages("plain") });
  cases["br_stream_tools_" + model] = () => converseStream({ modelId: model, messages: converseMessages("tool"), toolConfig: converseTools });
}
cases.br_spend = async () => {
  try {
    await bedrock.send(new ConverseCommand({ modelId: "gpt", messages: converseMessages("spend") }));
    return {};
  } catch (e) {
    return failure(e);
  }
};
cases.br_throttle = async () => {
  const r = await bedrock.send(new ConverseCommand({ modelId: "claude", messages: converseMessages("throttle") }));
  return { text: r.output.message.content[0].text };
};
cases.br_stream_midfail = async () => {
  try {
    return await converseStream({ modelId: "gpt", messages: converseMessages("midfail") });
  } catch (e) {
    return failure(e);
  }
};

const only = process.argv.slice(2);
const out = {};
for (const [name, fn] of Object.entries(cases)) {
  if (only.length && !only.includes(name)) continue;
  try {
    out[name] = await fn();
  } catch (e) {
    out[name] = { unexpected: true, ...failure(e) };
  }
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
bedrock.destroy();
