import type { AddressInfo } from 'node:net'
import { systemClock } from '@hourglass/core'
import { reply, startFakeProvider } from '@hourglass/testkit'
import express from 'express'
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import type { GatewayContext } from '../src/GatewayContext.js'
import { internalErrorReply } from '../src/http/errorReply.js'
import { sendError } from '../src/http/sendError.js'
import { type LogRecord, startGateway } from '../src/index.js'

/**
 * A bug answers 500 `internal_error`, and the client is told nothing more
 * (its message could carry anything). Its request line said only
 * `internal_error` too: the error itself — class, message, stack — is
 * logged at `error`, or nobody could find what broke.
 */
describe('sendError for an error nobody classified', () => {
  it('answers 500 internal_error and logs the error itself at error level', async () => {
    const lines: [string, string, Record<string, unknown> | undefined][] = []
    const ctx = {
      log: (level: string, event: string, fields?: Record<string, unknown>) =>
        lines.push([level, event, fields]),
      redact: <T>(value: T) => value,
      keyWait: () => undefined,
    } as unknown as GatewayContext
    const app = express()
    app.get('/bug', (_req, res) => {
      sendError(ctx, res, new TypeError("Cannot read properties of undefined (reading 'x')"))
    })
    app.get('/string', (_req, res) => {
      sendError(ctx, res, 'thrown as a string')
    })
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const res = await fetch(`${base}/bug`)
      expect(res.status).toBe(500)
      const body = (await res.json()) as { error: { code: string } }
      expect(body.error.code).toBe('internal_error')
      // The client learns nothing of the bug.
      expect(JSON.stringify(body)).not.toContain('reading')
      expect(lines).toEqual([
        [
          'error',
          'internal-error',
          {
            errorClass: 'TypeError',
            reason: "Cannot read properties of undefined (reading 'x')",
            stack: expect.stringContaining('internalErrorLogged.test.ts'),
          },
        ],
      ])
      lines.length = 0
      expect((await fetch(`${base}/string`)).status).toBe(500)
      expect(lines).toEqual([
        ['error', 'internal-error', { errorClass: 'string', reason: 'thrown as a string' }],
      ])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('a bug inside a chat completion, whole or streamed', () => {
  it('is logged as internal-error with what it wraps, in a stream after its 200 too', async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    const logs: LogRecord[] = []
    // A retry budget registry that breaks: a bug inside the call, after a
    // stream's 200 went out (its stream-interrupted line said only internal_error).
    const broken = {
      forProvider() {
        throw new Error('outer', { cause: new TypeError('inner sk-secret-123456') })
      },
    }
    const running = await startGateway({
      config: {
        providers: {
          p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['sk-secret-123456'] },
        },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
      },
      port: 0,
      drainOnSignals: false,
      logger: (record) => logs.push(record),
      retryBudgets: broken as never,
    })
    try {
      for (const stream of [false, true]) {
        logs.length = 0
        const res = await fetch(`${running.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-stainless-retry-count': '1' },
          body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }),
        })
        const text = await res.text()
        expect(text, `stream ${stream}`).toContain('internal_error')
        const bug = logs.find((r) => r.event === 'internal-error')
        expect(bug, `stream ${stream}`).toMatchObject({
          level: 'error',
          errorClass: 'Error',
          reason: 'outer',
          causes: ['TypeError: inner [redacted]'],
        })
        expect(JSON.stringify(logs)).not.toContain('sk-secret-123456')
      }
    } finally {
      await running.close()
      await fake.close()
    }
  })

  /**
   * A bug's 500 `internal_error` says `x-should-retry: false`. openai-node
   * retries every 5xx it is not told otherwise about (twice by default), and a
   * bug meets the same request again: one after the provider answered — the
   * answer paid for, then lost — had each retry send the request again and pay
   * for another answer, three generations billed for one 500.
   */
  it('a bug after the provider answered is one paid answer, not one per retry of the official client', async () => {
    const fake = await startFakeProvider({ dialect: 'openai' })
    // A retry budget that breaks when told of a success: a bug after the answer came.
    const budget = {
      canRetry: () => true,
      recordFailure() {},
      refundFailure() {},
      recordRetry() {},
      recordSuccess() {
        throw new TypeError('a bug after the answer')
      },
    }
    const running = await startGateway({
      config: {
        providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
      },
      port: 0,
      drainOnSignals: false,
      logger: () => {},
      retryBudgets: { forProvider: () => budget } as never,
    })
    try {
      fake.setReply(reply.text('a paid answer'))
      const client = new OpenAI({ baseURL: `${running.url}/v1`, apiKey: 'x', maxRetries: 2 })
      const error = await client.chat.completions
        .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.InternalServerError)
      expect(error).toMatchObject({ status: 500, code: 'internal_error' })
      expect(fake.requests).toHaveLength(1)
      expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe(
        'false',
      )
    } finally {
      await running.close()
      await fake.close()
    }
  })

  /**
   * `startGateway` answers what its router left, and a bug past the router's
   * own error handler (here the handler failed on what it was handed: a
   * thrown value that throws when read, from an injected clock) is answered
   * there. That 500 was written apart from every other bug's: no
   * `x-should-retry: false`, so the official clients retried it, and no
   * `cache-control: no-store`. Now it is the one bug reply.
   */
  it("startGateway's own 500, past the router, is the same bug reply: not to be retried", async () => {
    let armed = false
    const clock = {
      ...systemClock,
      now() {
        if (!armed) return systemClock.now()
        armed = false
        throw new Proxy(
          {},
          {
            get() {
              throw new TypeError('a bug reading the bug')
            },
          },
        )
      },
    }
    const running = await startGateway({
      config: {
        providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
      },
      port: 0,
      drainOnSignals: false,
      logger: () => {},
      clock,
    })
    try {
      // The next clock reading is the request's arrival's.
      armed = true
      const res = await fetch(`${running.url}/v1/models`)
      expect(res.status).toBe(500)
      expect(res.headers.get('x-should-retry')).toBe('false')
      expect(res.headers.get('cache-control')).toBe('no-store')
      expect(await res.json()).toEqual(internalErrorReply().body)
    } finally {
      await running.close()
    }
  })
})
