import type { AddressInfo } from 'node:net'
import express from 'express'
import { describe, expect, it } from 'vitest'
import type { GatewayContext } from '../src/GatewayContext.js'
import { sendError } from '../src/http/sendError.js'

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
