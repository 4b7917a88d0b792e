import { describe, expect, it } from 'vitest'
import { GatewayRequestError } from '../src/http/GatewayRequestError.js'
import { parseChatRequest } from '../src/http/parseChatRequest.js'

/**
 * zod reported every element of a list that failed, at microseconds an
 * issue: 2,000,000 × `1` as one message's content (3.8 MiB, within the
 * body limit) held the event loop 10–18 s for one 400, as modalities did
 * (12 s) and 100,000 messages of five bad parts each (2–3 s). Read up to
 * the first bad element now: a few milliseconds (the JSON.parse before it
 * not counted), so 1 s leaves two orders of magnitude for a busy machine.
 */
const ones = (n: number) => Array(n).fill('1').join(',')

/** The field `text` is refused for, having checked it was refused within 1 s. */
function problem(text: string) {
  const body = JSON.parse(text)
  const started = performance.now()
  try {
    parseChatRequest(body, { defaultMaxTokens: 16 })
  } catch (error) {
    expect(performance.now() - started).toBeLessThan(1_000)
    expect(error).toBeInstanceOf(GatewayRequestError)
    return (error as GatewayRequestError).param
  }
  throw new Error('accepted')
}

describe('a list of bad elements is refused at its first, however long it is', () => {
  it('2,000,000 numbers as content parts', { timeout: 30_000 }, () => {
    const text = `{"model":"m","messages":[{"role":"user","content":[${ones(2_000_000)}]}]}`
    expect(problem(text)).toBe('messages[0].content[0]')
  })

  it('2,000,000 numbers as modalities', { timeout: 30_000 }, () => {
    const text = `{"model":"m","messages":[{"role":"user","content":"hi"}],"modalities":[${ones(2_000_000)}]}`
    expect(problem(text)).toBe('modalities[0]')
  })

  it('100,000 messages of five bad parts each', { timeout: 30_000 }, () => {
    const message = `{"role":"user","content":[${ones(5)}]}`
    const text = `{"model":"m","messages":[${Array(100_000).fill(message).join(',')}]}`
    expect(problem(text)).toBe('messages[0].content[0]')
  })

  // Every list short, many of them: a cut past 1,000 elements only left each
  // list whole and read every message (1,000 × 1,000 parts: 4.6 s; × 1,024
  // annotations: 9–14 s). Each list stops at its first bad element now, the
  // list of messages too, whatever their lengths.
  it('1,000 messages of 1,000 bad parts each (1.9 MiB)', { timeout: 30_000 }, () => {
    const message = `{"role":"user","content":[${ones(1_000)}]}`
    const text = `{"model":"m","messages":[${Array(1_000).fill(message).join(',')}]}`
    expect(problem(text)).toBe('messages[0].content[0]')
  })

  it('1,000 assistant messages of 1,024 bad annotations each (2 MiB)', { timeout: 30_000 }, () => {
    const message = `{"role":"assistant","content":"x","annotations":[${ones(1_024)}]}`
    const text = `{"model":"m","messages":[${Array(1_000).fill(message).join(',')}]}`
    expect(problem(text)).toBe('messages[0].annotations[0]')
  })

  // The records whose keys the client chooses: zod reported every bad
  // entry (300,000 bad logit_bias keys, 3.3 MiB: 2.9 s; bad values 1.4 s;
  // metadata's 1.5 s), one 400 naming the first.
  const entries = (n: number, entry: (i: number) => string) =>
    Array.from({ length: n }, (_, i) => entry(i)).join(',')
  const withField = (field: string) =>
    `{"model":"m","messages":[{"role":"user","content":"hi"}],${field}}`

  it('300,000 logit_bias keys that are no token ids', { timeout: 30_000 }, () => {
    const text = withField(`"logit_bias":{${entries(300_000, (i) => `"a${i}":1`)}}`)
    expect(problem(text)).toBe('logit_bias.a0')
  })

  it('300,000 logit_bias values out of range', { timeout: 30_000 }, () => {
    const text = withField(`"logit_bias":{${entries(300_000, (i) => `"${i}":999`)}}`)
    expect(problem(text)).toBe('logit_bias["0"]')
  })

  it('300,000 metadata values that are no strings', { timeout: 30_000 }, () => {
    const text = withField(`"metadata":{${entries(300_000, (i) => `"k${i}":${i}`)}}`)
    expect(problem(text)).toBe('metadata.k0')
  })
})
