import { once } from 'node:events'
import { connect } from 'node:net'
import type { FakeProvider } from '@hourglass/testkit'
import OpenAI, { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * A caller whose budget is already spent on arrival (below the ingress
 * reserve: `x-deadline-remaining-ms: 1`, `grpc-timeout: 1m`) gets the
 * gateway's own 504 — OpenAI's error shape, `x-should-retry: false`, one log
 * line — not the ingress middleware's plain body, which the official SDK
 * cannot read and retries.
 */
describe('a budget spent before the request arrives', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  for (const [header, value] of [
    ['x-deadline-remaining-ms', '1'],
    ['grpc-timeout', '1m'],
    ['x-deadline-remaining-ms', '0'],
  ] as const) {
    it(`${header}: ${value} is the gateway's 504, which the official client does not retry`, async () => {
      const provider = await fakeProvider('openai', ['k'])
      fake = provider.fake
      // The ingress reserve is 10 ms at least: both budgets are below it on any machine.
      harness = await startHarness({
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
      })
      const seen: Response[] = []
      const client = new OpenAI({
        baseURL: `${harness.url}/v1`,
        apiKey: 'x',
        maxRetries: 2, // the SDK's default
        fetch: async (url, init) => {
          const res = await fetch(url, init)
          seen.push(res.clone())
          return res
        },
      })
      const error = await client.chat.completions
        .create(
          { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
          { headers: { [header]: value, 'x-request-id': 'spent-1' } },
        )
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(APIError)
      expect((error as APIError).status).toBe(504)
      expect((error as APIError).code).toBe('deadline_exceeded')
      expect(seen).toHaveLength(1)
      expect(seen[0]?.headers.get('x-should-retry')).toBe('false')
      expect(seen[0]?.headers.get('x-deadline-expired')).toBe('1')
      expect(seen[0]?.headers.get('x-request-id')).toBe('spent-1')
      const lines = harness.logs.filter((l) => l.event === 'request')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatchObject({
        requestId: 'spent-1',
        status: 504,
        error: 'deadline_exceeded',
      })
      expect(fake.requests).toHaveLength(0)
    })
  }

  it('with Expect: 100-continue the 504 comes without 100 Continue: no body is uploaded to read it; a request with budget gets 100 Continue', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'gpt']) },
    })
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    const { port } = new URL(harness.url)
    /** Sends the head only, holding the body back as such a client does; resolves the first thing the server says. */
    const firstAnswer = async (
      extra: string,
      path = '/v1/chat/completions',
      length = Buffer.byteLength(body),
    ) => {
      const socket = connect(Number(port), '127.0.0.1')
      socket.setEncoding('utf8')
      try {
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n${extra}\r\n`,
        )
        const [data] = (await once(socket, 'data')) as [string]
        return data.split('\r\n')[0]
      } finally {
        socket.destroy()
      }
    }
    expect(await firstAnswer('x-deadline-remaining-ms: 0\r\n')).toBe('HTTP/1.1 504 Gateway Timeout')
    expect(await firstAnswer('')).toBe('HTTP/1.1 100 Continue')
    // Refused before anything reads the body: no upload asked for either.
    expect(await firstAnswer('', '/v1/nowhere')).toBe('HTTP/1.1 404 Not Found')
    expect(await firstAnswer('', '/v1/chat/completions', 1e9)).toMatch(/^HTTP\/1\.1 413 /)
  })
})
