import { Writable } from 'node:stream'
import { type LoggerOptions, pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type GatewayRouter } from '../../src/index.js'

const KEY = 'sk-own-pino-0123456789'

function config() {
  return {
    providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: [KEY] } },
    models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
  }
}

/** A pino logger of the app's own, writing its JSON lines to `lines`. */
function appLogger(options: LoggerOptions<never>) {
  const lines: Record<string, unknown>[] = []
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    },
  })
  return { logger: pino(options, sink), lines }
}

describe("a pino logger of the app's keeps its own redaction", () => {
  let gateway: GatewayRouter | undefined
  afterEach(async () => {
    await gateway?.close()
    gateway = undefined
  })

  it("the app's redact paths still apply to lines through the gateway, beside the gateway's own", () => {
    const { logger, lines } = appLogger({ redact: ['user.email', 'ssn'] })
    gateway = createGateway(config(), { logger })
    const fields = {
      user: { email: 'ada@example.com', id: 7 },
      ssn: '078-05-1120',
      authorization: 'Bearer app-token',
      req: { headers: { cookie: 'session=1', accept: 'application/json' } },
      note: `echoed ${KEY}`,
    }
    gateway.log('info', 'audit', fields)
    const line = lines.find((l) => l['event'] === 'audit')
    // The app's paths, with its censor: the gateway's child replaced them, and these went out as given.
    expect(line).toMatchObject({ user: { email: '[Redacted]', id: 7 }, ssn: '[Redacted]' })
    // The gateway's own paths and its key scrub, with its censor.
    expect(line).toMatchObject({
      authorization: '[redacted]',
      req: { headers: { cookie: '[redacted]', accept: 'application/json' } },
      note: 'echoed [redacted]',
    })
    // What the caller handed over is left as it was.
    expect(fields.authorization).toBe('Bearer app-token')
    expect(fields.req.headers.cookie).toBe('session=1')
    expect(JSON.stringify(lines)).not.toContain('ada@example.com')
  })

  it("an app logger that removes redacted fields keeps removing them; the gateway's paths still blank theirs", () => {
    const { logger, lines } = appLogger({ redact: { paths: ['tenant'], remove: true } })
    gateway = createGateway(config(), { logger })
    gateway.log('warn', 'audit', { tenant: 'acme', apiKey: 'plain-key', ok: true })
    const line = lines.find((l) => l['event'] === 'audit')
    expect(line).toMatchObject({ apiKey: '[redacted]', ok: true, level: 40 })
    expect(line).not.toHaveProperty('tenant')
  })

  it("an app logger with no redaction of its own gets the gateway's", () => {
    const { logger, lines } = appLogger({})
    gateway = createGateway(config(), { logger })
    gateway.log('info', 'audit', {
      upstream: { headers: { 'x-api-key': 'xk', 'content-type': 'application/json' } },
      password: 'pw',
    })
    expect(lines.find((l) => l['event'] === 'audit')).toMatchObject({
      upstream: { headers: { 'x-api-key': '[redacted]', 'content-type': 'application/json' } },
      password: '[redacted]',
    })
  })
})
