import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, retryAfterMs } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { retryAfterFromHeaders, shouldRetryHeader } from '../../src/dialects/errorHeaders.js'
import { limitedByHeaders } from '../../src/dialects/rateLimitedBy.js'
import { callModel, isModelUnavailable, openAICompatible } from '../../src/index.js'

/**
 * A retry hint sent twice — a proxy (Azure API Management, LiteLLM, a
 * second gateway) that adds its own copy — reaches us joined (`100, 100`),
 * as fetch's `Headers` and Node join a repeated field, or as an array in
 * undici's record. Core's `retryAfterMs` reads `Retry-After` so: its first
 * member (the llm README: "the first of a field sent twice"), and so does
 * openai-node (`parseFloat`) read `retry-after-ms`. Passed over, a 429 with
 * `retry-after-ms: 100` twice and `Retry-After: 60` cooled the model for a
 * minute, every call in it refused unsent; and a 500 marked
 * `x-should-retry: false` twice was sent three times.
 */
const nowMs = Date.parse('2025-06-01T12:00:00Z')
const hint = (pairs: Array<[string, string]>) =>
  retryAfterFromHeaders(new Headers(pairs), { nowMs, useResetHeaders: true })

describe('a retry hint sent twice is read as Retry-After is: its first member', () => {
  it('retry-after-ms sent twice is its first member, not passed over for Retry-After', () => {
    expect(
      hint([
        ['retry-after-ms', '100'],
        ['retry-after-ms', '100'],
      ]),
    ).toBe(100)
    expect(
      hint([
        ['retry-after-ms', '100'],
        ['retry-after-ms', '100'],
        ['retry-after', '60'],
      ]),
    ).toBe(100)
    // Retry-After itself, as core reads it.
    expect(
      hint([
        ['retry-after', '5'],
        ['retry-after', '5'],
      ]),
    ).toBe(retryAfterMs('5, 5', nowMs))
  })

  it('a record holding the repeated field as an array (undici request()) too', () => {
    expect(
      retryAfterFromHeaders(
        { 'retry-after-ms': ['250', '250'] },
        { nowMs, useResetHeaders: false },
      ),
    ).toBe(250)
  })

  it("only HTTP's optional whitespace around retry-after-ms, as core reads Retry-After", () => {
    expect(hint([['retry-after-ms', ' 100\t']])).toBe(100)
    expect(retryAfterMs('1\u00a0', nowMs)).toBeUndefined()
    expect(hint([['retry-after-ms', '100\u00a0']])).toBeUndefined()
  })

  it('one value is read as before', () => {
    expect(
      hint([
        ['retry-after-ms', '1500.5'],
        ['retry-after', '9'],
      ]),
    ).toBe(1501)
    expect(hint([['retry-after-ms', 'NaN']])).toBeUndefined()
    expect(hint([['retry-after-ms', '1e3']])).toBeUndefined()
    expect(hint([['retry-after-ms', '-5']])).toBeUndefined()
  })

  it('rate-limit reset and remaining headers sent twice: their first members', () => {
    expect(
      hint([
        ['x-ratelimit-reset-requests', '20s'],
        ['x-ratelimit-reset-requests', '20s'],
        ['x-ratelimit-remaining-requests', '0'],
        ['x-ratelimit-remaining-requests', '0'],
        ['x-ratelimit-reset-tokens', '1s'],
        ['x-ratelimit-remaining-tokens', '500'],
      ]),
    ).toBe(20_000)
    expect(
      hint([
        ['anthropic-ratelimit-requests-reset', '2025-06-01T12:00:05Z'],
        ['anthropic-ratelimit-requests-reset', '2025-06-01T12:00:05Z'],
      ]),
    ).toBe(5000)
  })

  it('a remaining count sent twice names the limit, as its reset is read for the wait', () => {
    expect(
      limitedByHeaders(
        new Headers([
          ['x-ratelimit-remaining-tokens', '0'],
          ['x-ratelimit-remaining-tokens', '0'],
        ]),
      ),
    ).toBe('tokens')
    expect(limitedByHeaders({ 'anthropic-ratelimit-requests-remaining': ['0', '0'] })).toBe(
      'requests',
    )
  })

  it('x-should-retry sent twice is its first member: false still stops the retry', () => {
    expect(
      shouldRetryHeader(
        new Headers([
          ['x-should-retry', 'false'],
          ['x-should-retry', 'false'],
        ]),
      ),
    ).toBe(false)
    expect(shouldRetryHeader({ 'x-should-retry': ['true', 'true'] })).toBe(true)
    expect(shouldRetryHeader(new Headers([['x-should-retry', 'maybe']]))).toBeUndefined()
  })
})

/** A provider answering every call with `status` and the given headers, counting calls. */
async function provider(status: number, headers: Record<string, string | string[]>) {
  let calls = 0
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      calls++
      res.writeHead(status, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify({ error: { message: 'no', type: 'server_error' } }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const model = openAICompatible({
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    apiKey: 'k',
    model: 'm',
  })
  return { model, calls: () => calls, close: () => new Promise((r) => server.close(r)) }
}

describe('through callModel, a provider whose proxy repeats the header', () => {
  const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 5 }

  it('a 500 marked x-should-retry: false twice is sent once', async () => {
    const p = await provider(500, { 'x-should-retry': ['false', 'false'] })
    const deadline = Deadline.after(10_000)
    try {
      const error = await callModel({ models: [p.model], request, deadline }).catch((e) => e)
      expect(isModelUnavailable(error), String(error)).toBe(true)
      expect(p.calls()).toBe(1)
    } finally {
      deadline.dispose()
      await p.close()
    }
  })

  it('a 429 with retry-after-ms: 100 twice and Retry-After: 60 is retried after 100 ms, not given up for 60 s', async () => {
    const p = await provider(429, { 'retry-after-ms': ['100', '100'], 'retry-after': '60' })
    const deadline = Deadline.after(3000)
    try {
      const error = await callModel({ models: [p.model], request, deadline }).catch((e) => e)
      expect(isModelUnavailable(error), String(error)).toBe(true)
      // Retried on the 100 ms asked (three attempts by default), not refused
      // at once for a wait of 60 s that does not fit.
      expect(String(error)).not.toMatch(/59\d{3} ms does not fit/)
      expect(p.calls()).toBeGreaterThan(1)
    } finally {
      deadline.dispose()
      await p.close()
    }
  })
})
