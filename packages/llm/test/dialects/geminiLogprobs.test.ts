import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { InvalidChatRequestError } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatRequest, StreamEvent } from '../../src/types.js'

/**
 * OpenAI's `logprobs` / `top_logprobs` have an equivalent on Gemini
 * (`generationConfig.responseLogprobs` / `logprobs`, answered as the
 * candidate's `logprobsResult`): translated both ways, not refused.
 */

const gemini = dialects.gemini

const request = (extra: Record<string, unknown>): ChatRequest => ({
  maxTokens: 64,
  messages: [{ role: 'user', content: 'hi' }],
  extra,
})

const step = (token: string, logProbability: number) => ({ token, tokenId: 7, logProbability })
/** OpenAI's entry for a token, as the dialect writes it. */
const openAI = (token: string, logprob: number) => ({
  token,
  logprob,
  bytes: [...Buffer.from(token, 'utf8')],
})

describe('Gemini log probabilities', () => {
  it('logprobs: true asks for responseLogprobs, top_logprobs for that many candidates per step', () => {
    const config = (extra: Record<string, unknown>) =>
      gemini.buildRequest(request(extra), 'gemini-2.5-flash').body['generationConfig']
    expect(config({ logprobs: true, top_logprobs: 3 })).toEqual({
      maxOutputTokens: 64,
      responseLogprobs: true,
      logprobs: 3,
    })
    expect(config({ logprobs: true })).toEqual({ maxOutputTokens: 64, responseLogprobs: true })
    // 0 alternatives: what responseLogprobs alone gives.
    expect(config({ logprobs: true, top_logprobs: 0 })).toEqual({
      maxOutputTokens: 64,
      responseLogprobs: true,
    })
    expect(config({ logprobs: false })).toEqual({ maxOutputTokens: 64 })
  })

  it.each([
    [{ logprobs: 5 }, 'logprobs'],
    [{ logprobs: 'true' }, 'logprobs'],
    [{ logprobs: true, top_logprobs: '3' }, 'top_logprobs'],
    [{ logprobs: true, top_logprobs: -1 }, 'top_logprobs'],
    [{ logprobs: true, top_logprobs: 2.5 }, 'top_logprobs'],
    [{ logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
  ])('%o is refused naming %s, not sent as nothing', (extra, field) => {
    let thrown: unknown
    try {
      gemini.buildRequest(request(extra), 'gemini-2.5-flash')
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(InvalidChatRequestError)
    expect((thrown as InvalidChatRequestError).field).toBe(field)
  })

  it('top_logprobs without logprobs: true is refused naming it, as OpenAI answers 400', () => {
    for (const extra of [{ top_logprobs: 2 }, { logprobs: false, top_logprobs: 2 }]) {
      let thrown: unknown
      try {
        gemini.buildRequest(request(extra), 'gemini-2.5-flash')
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(InvalidChatRequestError)
      expect((thrown as InvalidChatRequestError).field).toBe('top_logprobs')
    }
  })

  it('top_logprobs: 0 without logprobs: true asks for nothing: accepted, nothing sent', () => {
    const config = (extra: Record<string, unknown>) =>
      gemini.buildRequest(request(extra), 'gemini-2.5-flash').body['generationConfig']
    expect(config({ logprobs: false, top_logprobs: 0 })).toEqual({ maxOutputTokens: 64 })
    expect(config({ top_logprobs: 0 })).toEqual({ maxOutputTokens: 64 })
  })

  it("a whole answer's logprobsResult comes back in OpenAI's shape, bytes the token's UTF-8", () => {
    const answer = gemini.parseResponse({
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'Hi 世界' }] },
          finishReason: 'STOP',
          logprobsResult: {
            topCandidates: [
              { candidates: [step('Hi', -0.1), step('Hello', -2.5)] },
              { candidates: [step(' 世界', -0.3), step(' there', -1.5)] },
            ],
            // proto3 JSON leaves a zero out: a certain token has no logProbability.
            chosenCandidates: [step('Hi', -0.1), { token: ' 世界', tokenId: 9 }],
          },
        },
      ],
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2 },
    })
    expect(answer.logprobs).toEqual({
      content: [
        { ...openAI('Hi', -0.1), top_logprobs: [openAI('Hi', -0.1), openAI('Hello', -2.5)] },
        {
          ...openAI(' 世界', 0),
          top_logprobs: [openAI(' 世界', -0.3), openAI(' there', -1.5)],
        },
      ],
      refusal: null,
    })
    expect(openAI(' 世界', 0).bytes).toEqual([32, 228, 184, 150, 231, 149, 140])
  })

  it('an answer without logprobsResult (not asked) has none', () => {
    const answer = gemini.parseResponse({
      candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] }, finishReason: 'STOP' }],
    })
    expect(answer.logprobs).toBeUndefined()
  })

  const chunks = [
    {
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'Hi' }] },
          logprobsResult: {
            topCandidates: [{ candidates: [step('Hi', -0.1)] }],
            chosenCandidates: [step('Hi', -0.1)],
          },
        },
      ],
    },
    {
      candidates: [
        {
          content: { role: 'model', parts: [{ text: ' there' }] },
          finishReason: 'STOP',
          logprobsResult: {
            topCandidates: [{ candidates: [step(' there', -0.4)] }],
            chosenCandidates: [step(' there', -0.4)],
          },
        },
      ],
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2 },
    },
  ]
  const joined = {
    content: [
      { ...openAI('Hi', -0.1), top_logprobs: [openAI('Hi', -0.1)] },
      { ...openAI(' there', -0.4), top_logprobs: [openAI(' there', -0.4)] },
    ],
    refusal: null,
  }

  it("streamed: each chunk's tokens, joined onto the finish", () => {
    const parser = gemini.createStreamParser()
    const events: StreamEvent[] = chunks.flatMap((chunk) =>
      parser.parseStreamEvent({ event: 'message', data: JSON.stringify(chunk) }),
    )
    const finish = events.find((e) => e.type === 'finish')
    expect(finish?.type === 'finish' && finish.logprobs).toEqual(joined)
  })

  it('the JSON array form of a stream (no alt=sse): every chunk’s steps, in order', () => {
    expect(gemini.parseResponse(chunks).logprobs).toEqual(joined)
  })
})
