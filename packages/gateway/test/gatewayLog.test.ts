import { describe, expect, it } from 'vitest'
import { createGateway, type LogRecord } from '../src/index.js'

/**
 * `gateway.log()`: an app's own line about the gateway (the CLI's forced
 * exit on a second signal) goes through the gateway's logger — the same
 * JSON records, its level, its scrub of secrets — not as plain text among them.
 */
describe('gateway.log', () => {
  it('writes a record through the gateway’s logger, secrets scrubbed, at its level', async () => {
    const logs: LogRecord[] = []
    const gateway = createGateway(
      {
        providers: {
          p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['sk-secret-123'] },
        },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
      },
      { logger: (record) => logs.push(record), logLevel: 'warn' },
    )
    try {
      gateway.log('info', 'below the level', {})
      gateway.log('error', 'shutdown', {
        message: 'SIGTERM again: exiting without waiting for the drain (key sk-secret-123)',
        forced: true,
        signal: 'SIGTERM',
      })
      expect(logs).toHaveLength(1)
      expect(logs[0]).toMatchObject({
        level: 'error',
        event: 'shutdown',
        forced: true,
        signal: 'SIGTERM',
      })
      expect(logs[0]?.msg).toMatch(/^SIGTERM again: exiting without waiting for the drain/)
      expect(JSON.stringify(logs[0])).not.toContain('sk-secret-123')
    } finally {
      await gateway.close()
    }
  })

  it('writes the fields as given, in their order after `event`: `message` as msg, secrets scrubbed at any depth', async () => {
    const logs: LogRecord[] = []
    const gateway = createGateway(
      {
        providers: {
          p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['sk-secret-123'] },
        },
        models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
      },
      { logger: (record) => logs.push(record) },
    )
    const nested = (depth: number): unknown =>
      depth === 0 ? 'key sk-secret-123' : { a: nested(depth - 1) }
    try {
      gateway.log('warn', 'custom', {
        zeta: 1,
        event: 'renamed',
        message: 'told sk-secret-123',
        alpha: ['sk-secret-123', 2],
        gone: undefined,
        deep: nested(9),
        error: new TypeError('bad sk-secret-123'),
      })
      // Not a record of fields: logged whole, as it always was (its message as msg).
      gateway.log('warn', 'thrown', new RangeError('out sk-secret-123') as never)
      expect(logs).toHaveLength(2)
      const [line, thrown] = logs as [LogRecord, LogRecord]
      const keys = Object.keys(line)
      expect(keys.slice(keys.indexOf('event'))).toEqual([
        'event',
        'zeta',
        'alpha',
        'deep',
        'error',
        'msg',
      ])
      expect(line).toMatchObject({
        event: 'renamed',
        zeta: 1,
        msg: 'told [redacted]',
        alpha: ['[redacted]', 2],
        deep: { a: { a: { a: { a: { a: { a: { a: { a: '{"a":"key [redacted]"}' } } } } } } } },
        error: { message: 'bad [redacted]' },
      })
      expect(thrown).toMatchObject({ event: 'thrown', msg: 'out [redacted]' })
      expect(JSON.stringify(logs)).not.toContain('sk-secret-123')
    } finally {
      await gateway.close()
    }
  })
})
