import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

/**
 * Gemini answers a request that sets `generationConfig.responseLogprobs:
 * true` with the candidate's `logprobsResult` (ai.google.dev/api/generate-content
 * #LogprobsResult): per decoding step the chosen token (`chosenCandidates`)
 * and, for `generationConfig.logprobs: N`, the N top candidates
 * (`topCandidates[].candidates`); streamed, each chunk's for its own tokens.
 * Not asked, none.
 */
let fake: FakeProvider
beforeAll(async () => {
  fake = await startFakeProvider({
    dialect: 'gemini',
    reply: reply.text('Hi there', { tokens: ['Hi', ' there'], thinking: 'hmm' }),
  })
})
afterAll(() => fake.close())

const call = (method: string, generationConfig?: object) =>
  fetch(`${fake.baseURL}/models/gemini-2.5-flash:${method}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'k', 'content-type': 'application/json' },
    body: JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      ...(generationConfig === undefined ? {} : { generationConfig }),
    }),
  })

interface Step {
  token: string
  tokenId: number
  logProbability: number
}
interface Result {
  topCandidates?: { candidates: Step[] }[]
  chosenCandidates: Step[]
}
interface Answer {
  candidates: { logprobsResult?: Result }[]
}

describe('fake Gemini log probabilities', () => {
  it('a whole answer carries one step per answer token, with the top candidates asked', async () => {
    const asked = { responseLogprobs: true, logprobs: 2, thinkingConfig: { includeThoughts: true } }
    const answer = (await (await call('generateContent', asked)).json()) as Answer
    const result = answer.candidates[0]?.logprobsResult as Result
    // The answer's tokens only: the thoughts have none.
    expect(result.chosenCandidates.map((c) => c.token)).toEqual(['Hi', ' there'])
    for (const c of result.chosenCandidates) {
      expect(c.logProbability).toBeLessThan(0)
      expect(Number.isInteger(c.tokenId)).toBe(true)
    }
    expect(result.topCandidates).toHaveLength(2)
    result.topCandidates?.forEach((top, i) => {
      expect(top.candidates).toHaveLength(2)
      expect(top.candidates[0]).toEqual(result.chosenCandidates[i])
      expect(top.candidates[1]!.logProbability).toBeLessThan(top.candidates[0]!.logProbability)
    })

    const chosenOnly = (await (
      await call('generateContent', { responseLogprobs: true })
    ).json()) as Answer
    expect(chosenOnly.candidates[0]?.logprobsResult).toEqual({
      chosenCandidates: result.chosenCandidates,
    })
  })

  it("streamed, each chunk carries its own token's step; not asked, no chunk has any", async () => {
    const sse = await readSse(
      await call('streamGenerateContent?alt=sse', { responseLogprobs: true, logprobs: 1 }),
    )
    const results = sse.events.map(
      (e) => (JSON.parse(e.data) as Answer).candidates[0]?.logprobsResult,
    )
    expect(results.flatMap((r) => r?.chosenCandidates.map((c) => c.token) ?? [])).toEqual([
      'Hi',
      ' there',
    ])
    for (const r of results) if (r !== undefined) expect(r.topCandidates).toHaveLength(1)

    const plain = await readSse(await call('streamGenerateContent?alt=sse'))
    expect(plain.raw).not.toContain('logprobsResult')
    const whole = await (await call('generateContent')).text()
    expect(whole).not.toContain('logprobsResult')
  })
})
