import { describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { StreamCollector } from '../../src/call/StreamCollector.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { StreamEvent } from '../../src/types.js'

/** Every event of `frames` (SSE data payloads) through a fresh parser of `dialect`, then its end. */
function parse(dialect: 'openai' | 'anthropic' | 'gemini', frames: unknown[]): StreamEvent[] {
  const parser = dialects[dialect].createStreamParser()
  const out: StreamEvent[] = []
  for (const frame of frames) {
    const data = typeof frame === 'string' ? frame : JSON.stringify(frame)
    const event = dialect === 'anthropic' ? (frame as { type: string }).type : undefined
    out.push(...parser.parseStreamEvent({ event, data }))
  }
  out.push(...parser.end())
  return out
}

function collect(events: StreamEvent[]) {
  const collector = new StreamCollector()
  for (const event of events) collector.add(event)
  return collector.response('openai', 'gpt-4o')
}

const chunk = (delta: object, finish: string | null = null, usage?: object) => ({
  id: 'chatcmpl-r',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  ...(usage === undefined ? {} : { usage }),
})

// OpenAI's CompletionUsage (openai-node src/resources/completions.ts).
const openAIUsageWire = {
  prompt_tokens: 1200,
  completion_tokens: 300,
  total_tokens: 1500,
  prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 192, audio_tokens: 0 },
}

describe('refusals (OpenAI structured outputs) stay apart from the answer', () => {
  it('a whole answer’s message.refusal is a refusal text block and ChatResponse.refusal', () => {
    const answer = dialects.openai.parseResponse({
      id: 'chatcmpl-r',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, refusal: 'I cannot help with that.' },
          finish_reason: 'stop',
        },
      ],
    })
    expect(answer.refusal).toBe('I cannot help with that.')
    expect(answer.content).toEqual([
      { type: 'text', text: 'I cannot help with that.', refusal: true },
    ])
    // Backward compatible: `text` still holds it, as before.
    expect(answer.text).toBe('I cannot help with that.')
  })

  it('an answer without a refusal has no refusal field', () => {
    const answer = dialects.openai.parseResponse({
      choices: [{ message: { role: 'assistant', content: '{"a":1}', refusal: null } }],
    })
    expect(answer.refusal).toBeUndefined()
    expect(answer.content).toEqual([{ type: 'text', text: '{"a":1}' }])
  })

  it('streamed delta.refusal pieces are marked text events, collected into one refusal block', () => {
    const events = parse('openai', [
      chunk({ role: 'assistant', content: null, refusal: '' }),
      chunk({ refusal: "I'm sorry, " }),
      chunk({ refusal: 'I cannot help with that.' }),
      chunk({}, 'stop'),
      '[DONE]',
    ])
    expect(events.filter((e) => e.type === 'text')).toEqual([
      { type: 'text', text: "I'm sorry, ", refusal: true },
      { type: 'text', text: 'I cannot help with that.', refusal: true },
    ])
    const answer = collect(events)
    expect(answer.refusal).toBe("I'm sorry, I cannot help with that.")
    expect(answer.content).toEqual([
      { type: 'text', text: "I'm sorry, I cannot help with that.", refusal: true },
    ])
  })

  it('the collector never joins refusal text onto answer text, nor the reverse', () => {
    const answer = collect([
      { type: 'text', text: 'partial ' },
      { type: 'text', text: 'no.', refusal: true },
      { type: 'text', text: ' more' },
      { type: 'finish', finishReason: 'stop' },
    ])
    expect(answer.content).toEqual([
      { type: 'text', text: 'partial ' },
      { type: 'text', text: 'no.', refusal: true },
      { type: 'text', text: ' more' },
    ])
    expect(answer.refusal).toBe('no.')
    expect(answer.text).toBe('partial no. more')
  })
})

describe('cached and reasoning token counts', () => {
  it('OpenAI: prompt_tokens_details.cached_tokens and completion_tokens_details.reasoning_tokens, whole and streamed', () => {
    const whole = dialects.openai.parseResponse({
      choices: [{ message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage: openAIUsageWire,
    })
    const expected = {
      inputTokens: 1200,
      outputTokens: 300,
      cachedInputTokens: 1024,
      reasoningTokens: 192,
    }
    expect(whole.usage).toEqual(expected)
    const events = parse('openai', [
      chunk({ content: 'ok' }),
      chunk({}, 'stop'),
      { id: 'chatcmpl-r', choices: [], usage: openAIUsageWire },
      '[DONE]',
    ])
    expect(events.at(-1)).toMatchObject({ type: 'finish', usage: expected })
  })

  // openai-node 6.49's PromptTokensDetails.cache_write_tokens: the part of
  // prompt_tokens written to the cache, apart from cached_tokens; GPT-5.6
  // and later bill it at 1.25× the input price (OpenAI's prompt caching
  // guide). Unread, Usage had no cache writes and a CostBudget priced them
  // as plain input.
  it('OpenAI: prompt_tokens_details.cache_write_tokens is cacheCreationInputTokens, whole and streamed, and priced as a write', () => {
    const wire = {
      prompt_tokens: 10_000,
      completion_tokens: 100,
      total_tokens: 10_100,
      prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 8_000, audio_tokens: 0 },
    }
    const expected = {
      inputTokens: 10_000,
      outputTokens: 100,
      cachedInputTokens: 0,
      cacheCreationInputTokens: 8_000,
    }
    const whole = dialects.openai.parseResponse({
      choices: [{ message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage: wire,
    })
    expect(whole.usage).toEqual(expected)
    const events = parse('openai', [
      chunk({ content: 'ok' }),
      chunk({}, 'stop'),
      { id: 'chatcmpl-r', choices: [], usage: wire },
      '[DONE]',
    ])
    expect(events.at(-1)).toMatchObject({ type: 'finish', usage: expected })
    // $5 in, $6.25 a cache write, $30 out per MTok: 2,000 × 5 + 8,000 ×
    // 6.25 + 100 × 30 = $0.063 (as plain input it was $0.053).
    const budget = new CostBudget({
      limitUsd: 1,
      prices: {
        'gpt-5.6': { inputPerMTok: 5, outputPerMTok: 30, cacheCreationInputPerMTok: 6.25 },
      },
    })
    expect(budget.record('gpt-5.6', whole.usage)).toBeCloseTo(0.063, 9)
  })

  it('OpenAI-compatible: DeepSeek’s prompt_cache_hit_tokens when prompt_tokens_details is absent', () => {
    const whole = dialects.openai.parseResponse({
      choices: [{ message: { role: 'assistant', content: 'ok' } }],
      usage: { prompt_tokens: 50, completion_tokens: 5, prompt_cache_hit_tokens: 32 },
    })
    expect(whole.usage).toEqual({ inputTokens: 50, outputTokens: 5, cachedInputTokens: 32 })
  })

  it('counts not reported (or not numbers) stay absent, not 0', () => {
    const whole = dialects.openai.parseResponse({
      choices: [{ message: { role: 'assistant', content: 'ok' } }],
      usage: {
        prompt_tokens: 5,
        completion_tokens: 1,
        prompt_tokens_details: { cached_tokens: 'lots' },
        completion_tokens_details: null,
      },
    })
    expect(whole.usage).toStrictEqual({ inputTokens: 5, outputTokens: 1 })
  })

  it('Anthropic: cache_read_input_tokens is the cached part of the input, cache_creation_input_tokens the written part, whole and streamed', () => {
    const usage = {
      input_tokens: 10,
      cache_creation_input_tokens: 20,
      cache_read_input_tokens: 2000,
      output_tokens: 7,
    }
    const whole = dialects.anthropic.parseResponse({
      type: 'message',
      id: 'msg_1',
      content: [{ type: 'text', text: 'hi' }],
      stop_reason: 'end_turn',
      usage,
    })
    expect(whole.usage).toEqual({
      inputTokens: 2030,
      outputTokens: 7,
      cachedInputTokens: 2000,
      cacheCreationInputTokens: 20,
    })
    const events = parse('anthropic', [
      { type: 'message_start', message: { id: 'msg_1', usage: { ...usage, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: { output_tokens: 7, input_tokens: null, cache_read_input_tokens: null },
      },
      { type: 'message_stop' },
    ])
    expect(events.at(-1)).toMatchObject({
      type: 'finish',
      usage: {
        inputTokens: 2030,
        outputTokens: 7,
        cachedInputTokens: 2000,
        cacheCreationInputTokens: 20,
      },
    })
  })

  it('Anthropic: 1-hour cache writes are charged at their own price (2× input), not at the 5-minute one, whole and streamed', () => {
    // 1000 plain input, 4000 written to 1-hour entries, 2000 to 5-minute ones.
    const usage = {
      input_tokens: 1000,
      cache_creation_input_tokens: 6000,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 2000, ephemeral_1h_input_tokens: 4000 },
      output_tokens: 0,
    }
    const whole = dialects.anthropic.parseResponse({
      type: 'message',
      id: 'msg_1',
      content: [{ type: 'text', text: 'hi' }],
      stop_reason: 'end_turn',
      usage,
    })
    expect(whole.usage).toMatchObject({
      cacheCreationInputTokens: 6000,
      cacheCreation1hInputTokens: 4000,
    })
    const events = parse('anthropic', [
      { type: 'message_start', message: { id: 'msg_1', usage } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 0 } },
      { type: 'message_stop' },
    ])
    const streamed = collect(events).usage
    expect(streamed).toStrictEqual(whole.usage)
    // Anthropic's own prices for a $3 model: 5-minute writes $3.75, 1-hour $6.
    const budget = new CostBudget({
      limitUsd: 1,
      prices: { sonnet: { inputPerMTok: 3, outputPerMTok: 15, cacheCreationInputPerMTok: 3.75 } },
    })
    // 1000 × $3 + 2000 × $3.75 + 4000 × $6, per million: the bill. Before,
    // every write at $3.75: $0.0255, 4000 × $2.25 short of it.
    expect(budget.record('sonnet', streamed)).toBeCloseTo(0.0345, 12)
    const priced = new CostBudget({
      limitUsd: 1,
      prices: {
        sonnet: {
          inputPerMTok: 3,
          outputPerMTok: 15,
          cacheCreationInputPerMTok: 3.75,
          cacheCreation1hInputPerMTok: 5,
        },
      },
    })
    expect(priced.record('sonnet', whole.usage)).toBeCloseTo(0.0305, 12)
  })

  it('Gemini: cachedContentTokenCount and thoughtsTokenCount, whole and streamed', () => {
    const usageMetadata = {
      promptTokenCount: 4000,
      cachedContentTokenCount: 3500,
      candidatesTokenCount: 100,
      thoughtsTokenCount: 250,
      totalTokenCount: 4350,
    }
    const expected = {
      inputTokens: 4000,
      outputTokens: 350,
      cachedInputTokens: 3500,
      reasoningTokens: 250,
    }
    const body = {
      responseId: 'r1',
      candidates: [{ content: { parts: [{ text: 'hi' }] }, finishReason: 'STOP' }],
      usageMetadata,
    }
    expect(dialects.gemini.parseResponse(body).usage).toEqual(expected)
    expect(parse('gemini', [body]).at(-1)).toMatchObject({ type: 'finish', usage: expected })
  })
})

describe('OpenAI-compatible content given as an array of parts (Mistral’s Magistral models)', () => {
  const thinking = { type: 'thinking', thinking: [{ type: 'text', text: 'Two and two…' }] }
  const text = { type: 'text', text: 'Four.' }

  it('a whole answer: the text parts are its text, the thinking parts its thinking', () => {
    const response = dialects.openai.parseResponse({
      id: 'r',
      model: 'magistral-medium-latest',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: [thinking, text] },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 9 },
    })
    // Before: '' — the array was read as no content, an empty success.
    expect(response.text).toBe('Four.')
    expect(response.content).toEqual([
      { type: 'thinking', thinking: 'Two and two…' },
      { type: 'text', text: 'Four.' },
    ])
  })

  it('a stream: delta.content parts become thinking and text events', () => {
    const events = parse('openai', [
      chunk({ role: 'assistant', content: [thinking] }),
      chunk({ content: [text] }),
      chunk({ content: '' }, 'stop', { prompt_tokens: 5, completion_tokens: 9 }),
    ])
    expect(events.filter((e) => e.type !== 'finish')).toEqual([
      { type: 'thinking', thinking: 'Two and two…' },
      { type: 'text', text: 'Four.' },
    ])
    expect(collect(events).text).toBe('Four.')
  })
})

describe('what an OpenAI answer says besides its message, kept', () => {
  const lp = (token: string) => ({ token, logprob: -0.1, bytes: null, top_logprobs: [] })
  const cite = {
    type: 'url_citation',
    url_citation: { url: 'https://example.com', title: 'E', start_index: 0, end_index: 2 },
  }

  it('whole: system_fingerprint, service_tier, annotations, logprobs and the prediction counts', () => {
    const response = dialects.openai.parseResponse({
      id: 'chatcmpl-w',
      model: 'gpt-4o',
      system_fingerprint: 'fp_1',
      service_tier: 'flex',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hi there', annotations: [cite] },
          logprobs: { content: [lp('Hi'), lp(' there')], refusal: null },
          finish_reason: 'stop',
        },
      ],
      usage: {
        prompt_tokens: 5,
        completion_tokens: 9,
        completion_tokens_details: { accepted_prediction_tokens: 3, rejected_prediction_tokens: 4 },
      },
    })
    expect(response).toMatchObject({
      systemFingerprint: 'fp_1',
      serviceTier: 'flex',
      annotations: [cite],
      logprobs: { content: [lp('Hi'), lp(' there')], refusal: null },
      usage: { acceptedPredictionTokens: 3, rejectedPredictionTokens: 4 },
    })
  })

  it('streamed: the same, each chunk’s logprobs and annotations joined onto the finish', () => {
    const withLogprobs = (delta: object, token: string) => ({
      ...chunk(delta),
      system_fingerprint: 'fp_1',
      choices: [{ index: 0, delta, logprobs: { content: [lp(token)] }, finish_reason: null }],
    })
    const events = parse('openai', [
      withLogprobs({ role: 'assistant', content: 'Hi' }, 'Hi'),
      withLogprobs({ content: ' there' }, ' there'),
      chunk({ annotations: [cite] }),
      { ...chunk({}, 'stop'), service_tier: 'flex' },
      { id: 'chatcmpl-r', choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } },
      '[DONE]',
    ])
    expect(collect(events)).toMatchObject({
      text: 'Hi there',
      systemFingerprint: 'fp_1',
      serviceTier: 'flex',
      annotations: [cite],
      logprobs: { content: [lp('Hi'), lp(' there')], refusal: null },
    })
  })

  it('a plain answer gains none of them', () => {
    const response = dialects.openai.parseResponse({
      id: 'c',
      choices: [{ index: 0, message: { role: 'assistant', content: 'x' }, logprobs: null }],
    })
    for (const key of ['systemFingerprint', 'serviceTier', 'annotations', 'logprobs'])
      expect(response, key).not.toHaveProperty(key)
  })
})

describe('usage the provider did not report', () => {
  // Whole answers without their counts, as some servers and proxies send them.
  const bodies = {
    openai: {
      id: 'c1',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    },
    anthropic: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'hi' }],
      stop_reason: 'end_turn',
    },
    gemini: {
      candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' }],
    },
  } as const
  const usages = {
    openai: { usage: { prompt_tokens: 4, completion_tokens: 1 } },
    anthropic: { usage: { input_tokens: 4, output_tokens: 1 } },
    gemini: { usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 1 } },
  } as const

  for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
    it(`${dialect}: a whole answer without usage says usageReported false (its zeros are not counts)`, () => {
      const missing = dialects[dialect].parseResponse(bodies[dialect])
      expect(missing.usage).toEqual({ inputTokens: 0, outputTokens: 0 })
      expect(missing.usageReported).toBe(false)
      const nulls = dialects[dialect].parseResponse({
        ...bodies[dialect],
        ...(dialect === 'gemini' ? { usageMetadata: {} } : { usage: null }),
      })
      expect(nulls.usageReported).toBe(false)
      const reported = dialects[dialect].parseResponse({ ...bodies[dialect], ...usages[dialect] })
      expect(reported.usage).toEqual({ inputTokens: 4, outputTokens: 1 })
      expect(reported).not.toHaveProperty('usageReported')
    })
  }

  it('anthropic and gemini: a stream without counts finishes with no usage, and its answer says usageReported false', () => {
    const anthropicEvents = parse('anthropic', [
      {
        type: 'message_start',
        message: { id: 'msg_1', type: 'message', role: 'assistant', content: [] },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' } },
      { type: 'message_stop' },
    ])
    const geminiEvents = parse('gemini', [
      {
        candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' }],
      },
    ])
    for (const events of [anthropicEvents, geminiEvents]) {
      const finish = events.find((e) => e.type === 'finish')
      expect(finish).toMatchObject({ type: 'finish', finishReason: 'stop' })
      expect(finish).toHaveProperty('usage', undefined)
      expect(collect(events).usageReported).toBe(false)
    }
  })
})
