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
})
