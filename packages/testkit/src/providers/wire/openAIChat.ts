import { randomInt } from 'node:crypto'
import { frameJson } from './frameJson.js'
import { type MadeUpLogprob, madeUpLogprobs } from './madeUpLogprobs.js'
import type { AnswerPlan, Frame, WireFormat } from './WireFormat.js'

/**
 * OpenAI chat completions, as OpenAI and the compatible providers (DeepSeek,
 * Qwen compatible mode, Doubao/Ark, Qianfan v2) send it. Reasoning goes out
 * as `reasoning_content` (DeepSeek's field, which Qwen, Ark and Qianfan v2
 * took up) — except from OpenAI, whose Chat Completions never sends its
 * reasoning: an o-series stream goes silent after the role chunk while the
 * model thinks, and only `usage.completion_tokens_details.reasoning_tokens`
 * counts it. The `openai` dialect keeps that silence for as long as the
 * thinking takes (its tokens paced as any others, written as nothing), so a
 * stall or first-token test sees it.
 *
 * Usage in a stream: only when the request set `stream_options.include_usage`,
 * in an extra chunk with `choices: []` before `[DONE]`, every other chunk
 * carrying `"usage": null` — OpenAI's documented behaviour
 * (openai-openapi `ChatCompletionStreamOptions.include_usage`), which Qwen's
 * compatible mode, Ark and Qianfan v2 follow (Qwen: "只在include_usage为true时，
 * 在最后一个chunk显示", help.aliyun.com/zh/model-studio/use-qwen-by-calling-api).
 * Qwen's compatible mode and Ark send `"usage":null` on every chunk even
 * when not asked (Model Studio's qwen3-max stream with only `"stream":
 * true`: `…"usage":null,"created":…,"system_fingerprint":null,…` on each
 * chunk, no usage chunk; ModelArk's seed-1-6 stream alike). DeepSeek alone
 * puts usage on the finishing chunk, asked for or not, and emits no
 * separate usage chunk; with `include_usage` every other chunk
 * carries `"usage": null` (api-docs.deepseek.com/api/create-chat-completion
 * `stream_options.include_usage`, as quoted in moona3k/macparakeet#1087: "If
 * omitted or set to false, the usage field is absent from all chunks except
 * the last one"; raw DeepSeek chunks with `"usage":null` in
 * neuron-core/neuron-ai#223 — whose client always sets `include_usage` —
 * and router-for-me/CLIProxyAPI#3076; raw deepseek-chat streams of
 * December 2025 whose request is not shown carry no `usage` key before the
 * finishing chunk — nothing seen shows `null`s when it was not asked). DeepSeek's usage also counts its context
 * cache (`prompt_cache_hit_tokens`, `prompt_cache_miss_tokens`,
 * `prompt_tokens_details.cached_tokens`: a raw finishing chunk in
 * brainlid/langchain#288).
 *
 * Which delta fields are `null` rather than absent is part of the format: a
 * client that appends `delta.content` as a string breaks on a `null`. DeepSeek
 * in thinking mode names both fields in every delta — `{"content":null,
 * "reasoning_content":"…"}` while it thinks, `{"content":"…",
 * "reasoning_content":null}` after, opening with `{"role":"assistant",
 * "content":null,"reasoning_content":""}` and finishing with `{"content":"",
 * "reasoning_content":null}` (a raw deepseek-reasoner chunk in tmc/langchaingo
 * llms/openai/internal/openaiclient/chat_test.go; a raw deepseek-v4-flash
 * stream; langchain-ai/langchain#31065). Qwen's compatible mode does the same
 * with `enable_thinking` (Model Studio's deep-thinking docs, qwen-plus:
 * `{"content":null,"role":"assistant","reasoning_content":""}`, then
 * `{"content":null,"reasoning_content":"嗯"}`, finishing with
 * `{"content":"","reasoning_content":null}`). Doubao (Ark) names the role on
 * every delta, and its thinking deltas carry an empty `content`:
 * `{"content":"","reasoning_content":"user","role":"assistant"}` (BytePlus
 * ModelArk's streaming docs, seed-1-6; volcengine's doubao chunks, each
 * `role="assistant"`). OpenAI's first delta carries
 * `"refusal":null`, and an answer that opens with a tool call has no role
 * chunk of its own: the first call's header comes with `role`, `content:
 * null` and `refusal: null` (recorded gpt-4o-mini streams in dotnet/extensions
 * test/Libraries/Microsoft.Extensions.AI.OpenAI.Tests/OpenAIChatClientTests.cs);
 * Qwen's compatible mode does the same, without the `refusal`. Doubao sends
 * no role chunk at all unless it thinks (see `roleDelta`).
 *
 * Qwen streams a tool call's arguments in pieces that each repeat `"id":""`
 * and `"type":"function"` — `{"tool_calls":[{"function":{"arguments":
 * " \"杭州市\"}"},"index":0,"id":"","type":"function"}]}` (Model Studio's
 * function-calling docs, qwen-plus; a qwen-max stream alike): a client that
 * takes each piece's `id` as the call's loses it.
 *
 * OpenAI pads every chunk of a stream, the usage chunk included, with a last
 * field `"obfuscation"`: random letters and digits (none at times: `""`)
 * that even out the chunks' sizes against side-channel attacks, sent unless
 * the request set `stream_options.include_obfuscation: false` (openai-openapi
 * `ChatCompletionStreamOptions.include_obfuscation`, "included by default",
 * since August 2025; recorded gpt-4-0613, gpt-4o and gpt-3.5-turbo-0125
 * streams: `…"finish_reason":null}],"obfuscation":"3S9RmT4NS9k3b"}`,
 * `…"usage":null,"obfuscation":"a"}`). The compatible providers send none.
 */
export const openAIChat: WireFormat = {
  toolIdPrefix: 'call_',
  idPrefix: 'chatcmpl-',
  streamContentType: 'text/event-stream; charset=utf-8',

  json(plan) {
    const text = plan.textTokens.join('')
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: text === '' && plan.toolCalls.length > 0 ? null : text,
      refusal: null,
      // OpenAI lists the answer's citations, none included (`annotations: []`).
      ...(plan.dialect === 'openai' ? { annotations: [] } : {}),
    }
    if (plan.thinkingTokens.length > 0 && plan.dialect !== 'openai') {
      message['reasoning_content'] = plan.thinkingTokens.join('')
    }
    if (plan.toolCalls.length > 0) {
      message['tool_calls'] = plan.toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.argumentsJson },
      }))
    }
    return {
      id: plan.id,
      object: 'chat.completion',
      created: plan.created,
      model: plan.model,
      choices: [
        {
          index: 0,
          message,
          logprobs: tokenLogprobs(plan, plan.textTokens, 0),
          finish_reason: plan.finishReason,
        },
      ],
      usage: usage(plan),
      ...serviceTier(plan),
      ...systemFingerprint(plan),
    }
  },

  frames(plan) {
    // DeepSeek: usage rides on the finishing chunk. Everyone else: only when
    // asked, in a chunk of its own, and `usage: null` on the others — Qwen
    // and Doubao put the `null` on every chunk, asked or not.
    const deepseek = plan.dialect === 'deepseek'
    const qwen = plan.dialect === 'qwen'
    const usageNull = plan.includeUsage || qwen || plan.dialect === 'doubao' ? { usage: null } : {}
    const pad = (part: unknown): { obfuscation?: string } =>
      plan.obfuscation === true ? { obfuscation: obfuscation(part) } : {}
    const chunk = (
      delta: unknown,
      finish: string | null = null,
      extra: object = usageNull,
      logprobs: object | null = null,
    ): string =>
      `data: ${JSON.stringify({
        id: plan.id,
        object: 'chat.completion.chunk',
        created: plan.created,
        model: plan.model,
        ...serviceTier(plan),
        ...systemFingerprint(plan),
        choices: [streamChoice(plan, delta, finish, logprobs)],
        ...extra,
        ...pad(delta),
      })}\n\n`
    const openai = plan.dialect === 'openai'
    // DeepSeek and Qwen in thinking mode name both fields in every delta, the
    // one not being generated as `null` (see `thinkingDeltas`).
    const thinkingMode = (deepseek || plan.dialect === 'qwen') && plan.thinkingTokens.length > 0
    const doubao = plan.dialect === 'doubao'
    // OpenAI and Qwen open an answer that starts with a tool call with that
    // call's header, role and `content: null` in one chunk: no role chunk of
    // its own.
    const roleInToolCall =
      (openai || qwen) &&
      plan.textTokens.length === 0 &&
      plan.thinkingTokens.length === 0 &&
      plan.toolCalls.length > 0
    // Doubao (Ark) has no role chunk either unless it thinks: its first chunk
    // is the first token's, which names the role itself (see `roleDelta`).
    const opener = roleInToolCall ? undefined : roleDelta(plan, thinkingMode)
    const frames: Frame[] = []
    if (opener !== undefined) frames.push({ text: chunk(opener) })
    // OpenAI: the thinking is generated (paced, counted, billed) but not sent.
    for (const t of plan.thinkingTokens) {
      frames.push({
        text: openai
          ? ''
          : chunk(
              thinkingMode
                ? { content: null, reasoning_content: t }
                : doubao
                  ? { content: '', reasoning_content: t, role: 'assistant' }
                  : { reasoning_content: t },
            ),
        token: true,
      })
    }
    plan.textTokens.forEach((t, i) => {
      frames.push({
        text: chunk(
          thinkingMode
            ? { content: t, reasoning_content: null }
            : doubao
              ? { content: t, role: 'assistant' }
              : { content: t },
          null,
          usageNull,
          // Each content chunk carries its own token's.
          tokenLogprobs(plan, [t], i),
        ),
        token: true,
      })
    })
    plan.toolCalls.forEach((call, index) => {
      if (doubao) {
        // Ark sends the calls whole, in the finishing chunk (`finishDelta`):
        // their arguments are generated (paced, counted) but not streamed.
        for (const _ of call.pieces) frames.push({ text: '', token: true })
        return
      }
      const header = {
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } },
        ],
      }
      frames.push({
        text: chunk(roleInToolCall && index === 0 ? firstCallDelta(plan, header) : header),
      })
      for (const piece of call.pieces) {
        // Qwen repeats the call's `type` and an empty `id` on every later
        // piece of its arguments.
        const part = qwen
          ? { index, id: '', type: 'function', function: { arguments: piece } }
          : { index, function: { arguments: piece } }
        frames.push({ text: chunk({ tool_calls: [part] }), token: true })
      }
    })
    frames.push({
      text: chunk(
        finishDelta(plan, thinkingMode),
        plan.finishReason,
        deepseek ? { usage: usage(plan) } : usageNull,
      ),
      finish: true,
    })
    if (!deepseek && plan.includeUsage) {
      const counts = usage(plan)
      frames.push({
        text: `data: ${JSON.stringify({
          id: plan.id,
          object: 'chat.completion.chunk',
          created: plan.created,
          model: plan.model,
          ...serviceTier(plan),
          ...systemFingerprint(plan),
          choices: [],
          usage: counts,
          ...pad(counts),
        })}\n\n`,
      })
    }
    frames.push({ text: 'data: [DONE]\n\n' })
    return frames
  },

  errorFrame(error, plan) {
    if (plan.dialect === 'qwen') {
      // DashScope's own SSE framing: no space after the colons, and the
      // status the error stands for rides along as a comment line.
      return `id:${plan.textTokens.length + 1}\nevent:error\n:HTTP_STATUS/${error.status ?? 500}\ndata:${frameJson(error.body)}\n\n`
    }
    return `data: ${frameJson(error.body)}\n\n`
  },
}

/**
 * OpenAI names the tier that served the answer on the answer and on every
 * chunk, asked for or not: `"service_tier":"default"` (raw gpt-4o-mini and
 * gpt-4.1-nano streams of 2025; openai-node `ChatCompletion.service_tier`,
 * "the processing mode actually used"). So does Doubao (Ark): `"service_tier":
 * "default"` on every answer and chunk ("scale" only for a request drawing on
 * a TPM guarantee). The other compatible providers send none.
 */
function serviceTier(plan: AnswerPlan): { service_tier?: string } {
  if (plan.dialect === 'openai') return { service_tier: plan.serviceTier ?? 'default' }
  return plan.dialect === 'doubao' ? { service_tier: 'default' } : {}
}

/**
 * A stream chunk's choice. Doubao (Ark) leaves `finish_reason` out until
 * the finishing chunk and sends no `logprobs`: `{"delta":{…},"index":0}`,
 * then `{"delta":{"content":"","role":"assistant"},"finish_reason":"stop",
 * "index":0}` (BytePlus ModelArk's streaming docs, seed-1-6-250915; raw
 * doubao-seed-1-6-251015 streams). A client that takes any chunk whose
 * `finish_reason !== null` for the last one stops at Ark's first.
 */
function streamChoice(
  plan: AnswerPlan,
  delta: unknown,
  finish: string | null,
  logprobs: object | null = null,
): object {
  if (plan.dialect !== 'doubao') return { index: 0, delta, logprobs, finish_reason: finish }
  const withLogprobs = logprobs === null ? {} : { logprobs }
  return finish === null
    ? { delta, ...withLogprobs, index: 0 }
    : { delta, finish_reason: finish, ...withLogprobs, index: 0 }
}

/**
 * `choices[].logprobs` for `tokens` (the answer's text tokens from `first`
 * on) when the request set `logprobs: true` (openai-openapi
 * `ChatCompletionTokenLogprob`): per token its `logprob`, UTF-8 `bytes` and
 * `top_logprobs` (as many as `top_logprobs` asked, the chosen one first);
 * `refusal: null`. The figures are made up but the same for the same answer.
 * Not asked, or no text: `null`.
 */
function tokenLogprobs(plan: AnswerPlan, tokens: readonly string[], first: number): object | null {
  if (plan.logprobs === undefined || tokens.length === 0) return null
  const entry = ({ token, logprob }: MadeUpLogprob) => ({
    token,
    logprob,
    bytes: [...Buffer.from(token, 'utf8')],
  })
  return {
    content: madeUpLogprobs(tokens, first, plan.logprobs).map((step) => ({
      ...entry(step.chosen),
      top_logprobs: step.top.map(entry),
    })),
    refusal: null,
  }
}

const PADDING = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/**
 * A chunk's `obfuscation`: random letters and digits that bring what the
 * chunk carries (`part`, as JSON) to a multiple of 16 characters — OpenAI's
 * lengths vary with the chunk's, from none to about a dozen and a half.
 */
function obfuscation(part: unknown): string {
  const length = (16 - (JSON.stringify(part).length % 16)) % 16
  let out = ''
  for (let i = 0; i < length; i++) out += PADDING[randomInt(PADDING.length)]
  return out
}

/**
 * The finishing chunk's delta: `{}` from OpenAI; DeepSeek's says `content:
 * ""` (`"delta":{"content":""},"logprobs":null,"finish_reason":"stop"` from
 * deepseek-chat; `{"content":"","reasoning_content":null}` in thinking mode,
 * the raw deepseek-v4-flash stream above), and so does Qwen's after text.
 */
function finishDelta(plan: AnswerPlan, thinkingMode: boolean): object {
  if (thinkingMode) return { content: '', reasoning_content: null }
  if (plan.dialect === 'deepseek') return { content: '' }
  // Qwen: `{"content":""}` after text, `{}` after tool calls (Model Studio's
  // streaming and function-calling docs, qwen-plus and qwen-max streams).
  if (plan.dialect === 'qwen' && plan.finishReason !== 'tool_calls') return { content: '' }
  // Doubao names the role here too, with an empty content (Ark's streams),
  // and carries the tool calls, whole (see `doubaoToolCalls`).
  if (plan.dialect === 'doubao') {
    if (plan.toolCalls.length === 0) return { content: '', role: 'assistant' }
    return {
      content: '',
      ...(plan.thinkingTokens.length > 0 ? { reasoning_content: '' } : {}),
      role: 'assistant',
      tool_calls: doubaoToolCalls(plan),
    }
  }
  return {}
}

/**
 * Doubao's tool calls in a stream: every call whole, arguments included, in
 * the chunk that says `finish_reason: "tool_calls"` — no header chunk, no
 * argument pieces: `{"content":"","role":"assistant","tool_calls":[{"function":
 * {"arguments":"{\"location\": \"北京\"}","name":"get_current_weather"},
 * "id":"call_pwdm…","index":0,"type":"function"},{…"index":1…}]},
 * "finish_reason":"tool_calls"` (a raw doubao-seed-code-preview-251028
 * stream; Volcengine Ark's function-calling docs show the same single chunk
 * for doubao-1-5). A client that stops reading at the first non-null
 * `finish_reason` before taking that chunk's delta loses every call.
 */
function doubaoToolCalls(plan: AnswerPlan): object[] {
  return plan.toolCalls.map((call, index) => ({
    function: { arguments: call.argumentsJson, name: call.name },
    id: call.id,
    index,
    type: 'function',
  }))
}

/**
 * OpenAI and DeepSeek name the backend configuration (`"fp_…"`) — except
 * OpenAI's gpt-5 family, which sends the field as `null` on every answer
 * and chunk (recorded gpt-5-2025-08-07 and gpt-5-nano-2025-08-07 streams
 * and answers of 2025, `"service_tier":"default","system_fingerprint":null`,
 * and gpt-5.x streams of 2026 alike, where gpt-4o-mini and gpt-4.1-nano
 * send `"fp_…"`); so the `openai` fake decides by the model it names. Qwen's
 * compatible mode sends `null` on every answer and chunk too
 * (`"system_fingerprint":null` in every Model Studio example, qwen-plus,
 * qwen-max, qwen3-max, qwen-flash alike) — a client that reads it as a
 * string gets none —, and Doubao (Ark) has no such field at all.
 */
function systemFingerprint(plan: AnswerPlan): { system_fingerprint?: string | null } {
  if (plan.dialect === 'doubao') return {}
  if (plan.dialect === 'qwen') return { system_fingerprint: null }
  if (plan.dialect === 'openai' && plan.model.startsWith('gpt-5')) {
    return { system_fingerprint: null }
  }
  return { system_fingerprint: 'fp_hourglass_fake' }
}

/**
 * The first chunk's delta, or none. OpenAI adds `refusal: null` (recorded
 * gpt-4o-mini streams: `{"role":"assistant","content":"","refusal":null}`);
 * DeepSeek in thinking mode opens with `content: null` and an empty
 * `reasoning_content`. Doubao (Ark) sends no opening chunk when it does not
 * think — its first chunk is the first token's, `{"content":"我","role":
 * "assistant"}` — and opens a thinking answer with both fields empty,
 * `{"content":"","reasoning_content":"","role":"assistant"}` (raw
 * doubao-seed-1-6-251015 and doubao-seed-code-preview-251028 streams; the
 * Volcengine Ark docs' streamed example starts with `content="从前"` too).
 */
function roleDelta(plan: AnswerPlan, thinkingMode: boolean): object | undefined {
  if (plan.dialect === 'openai') return { role: 'assistant', content: '', refusal: null }
  if (plan.dialect === 'doubao') {
    if (plan.thinkingTokens.length === 0) return undefined
    return { content: '', reasoning_content: '', role: 'assistant' }
  }
  if (thinkingMode) return { role: 'assistant', content: null, reasoning_content: '' }
  return { role: 'assistant', content: '' }
}

/**
 * The delta of an answer's first chunk when the answer opens with a tool
 * call: the role and `content: null` ride with the call's header. OpenAI's
 * adds `refusal: null` (recorded gpt-4o-mini streams); Qwen's names content,
 * calls and role in that order: `{"content":null,"tool_calls":[{…"index":0,
 * "id":"call_deb0…","type":"function"}],"role":"assistant"}` (a qwen-max
 * stream of 2025; Model Studio's function-calling docs, qwen-plus, 2026).
 */
function firstCallDelta(plan: AnswerPlan, header: { tool_calls: object[] }): object {
  if (plan.dialect === 'qwen') return { content: null, ...header, role: 'assistant' }
  return { role: 'assistant', content: null, ...header, refusal: null }
}

function usage(plan: AnswerPlan) {
  const counts = {
    prompt_tokens: plan.inputTokens,
    completion_tokens: plan.outputTokens,
    total_tokens: plan.inputTokens + plan.outputTokens,
  }
  if (plan.dialect === 'openai') {
    // OpenAI sends both detail objects on every answer, zeros included (the
    // API reference's chat completion object), whole and in the usage chunk.
    return {
      ...counts,
      prompt_tokens_details: {
        cached_tokens: plan.cachedInputTokens,
        audio_tokens: 0,
        // The part of `prompt_tokens` written to the cache (GPT-5.6 and
        // later bill it at 1.25× the input price), when a reply says so.
        ...(plan.cacheCreationInputTokens > 0
          ? { cache_write_tokens: plan.cacheCreationInputTokens }
          : {}),
      },
      completion_tokens_details: {
        // Parts of `completion_tokens`: never more than it.
        reasoning_tokens: Math.min(plan.thinkingTokens.length, plan.outputTokens),
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    }
  }
  if (plan.dialect === 'qwen') {
    // Qwen counts the cache on every answer and usage chunk, zeros included,
    // and in thinking mode the thinking's part of `completion_tokens` before
    // it: `"usage":{"prompt_tokens":22,"completion_tokens":382,
    // "total_tokens":404,"completion_tokens_details":{"reasoning_tokens":210},
    // "prompt_tokens_details":{"cached_tokens":0}}` (qwen-plus, 2025).
    return {
      ...counts,
      ...(plan.thinkingTokens.length > 0
        ? {
            completion_tokens_details: {
              reasoning_tokens: Math.min(plan.thinkingTokens.length, plan.outputTokens),
            },
          }
        : {}),
      prompt_tokens_details: { cached_tokens: plan.cachedInputTokens },
    }
  }
  if (plan.dialect === 'doubao') {
    // Ark counts the cache and the thinking on every answer, zeros included:
    // `"usage":{"completion_tokens":19,"prompt_tokens":18,"total_tokens":37,
    // "prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":
    // {"reasoning_tokens":0}}` (doubao-seed-1-6, doubao-seed-2-0-mini answers).
    return {
      ...counts,
      prompt_tokens_details: { cached_tokens: plan.cachedInputTokens },
      completion_tokens_details: {
        reasoning_tokens: Math.min(plan.thinkingTokens.length, plan.outputTokens),
      },
    }
  }
  if (plan.dialect !== 'deepseek') {
    // Qianfan v2: the cached part of `prompt_tokens`, which counts it, only
    // when a reply says so.
    return plan.cachedInputTokens > 0
      ? { ...counts, prompt_tokens_details: { cached_tokens: plan.cachedInputTokens } }
      : counts
  }
  // DeepSeek's context-cache counts (brainlid/langchain#288, a raw chunk).
  return {
    ...counts,
    prompt_tokens_details: { cached_tokens: plan.cachedInputTokens },
    // The thinking's part of `completion_tokens`, as a thinking-mode answer reports it.
    ...(plan.thinkingTokens.length > 0
      ? {
          completion_tokens_details: {
            reasoning_tokens: Math.min(plan.thinkingTokens.length, plan.outputTokens),
          },
        }
      : {}),
    prompt_cache_hit_tokens: plan.cachedInputTokens,
    prompt_cache_miss_tokens: plan.inputTokens - plan.cachedInputTokens,
  }
}
