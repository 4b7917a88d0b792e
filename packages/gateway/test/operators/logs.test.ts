import { Writable } from 'node:stream'
import { type FakeProvider, openAIErrors, reply } from '@hourglass/testkit'
import { pino } from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { LogRecord } from '../../src/index.js'
import { createLog } from '../../src/log/createLog.js'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

describe('logs that tell the truth', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function one(extra: Record<string, unknown> = {}) {
    const { fake, entry } = await fakeProvider('openai', ['sk-log-key-0001'])
    fakes.push(fake)
    harness = await startHarness({
      providers: { p: entry },
      models: { m: fallback(['p', 'model-x']) },
      ...extra,
    })
    return fake
  }

  const requestLines = () => harness!.logs.filter((l) => l.event === 'request')

  it('a client that hangs up before the answer is client_closed with status 499, not a 504; the upstream call stops', async () => {
    const fake = await one()
    fake.enqueue(reply.text('too late for anyone', { latencyMs: 3000 }))
    const controller = new AbortController()
    const call = harness!.client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      { signal: controller.signal },
    )
    await fake.waitForRequests(1)
    controller.abort()
    await expect(call).rejects.toThrow()
    await expect.poll(() => requestLines().length).toBe(1)
    expect(requestLines()[0]).toMatchObject({ level: 'info', status: 499, error: 'client_closed' })
    expect(
      harness!.logs.some((l) => l['error'] === 'deadline_exceeded' || l['status'] === 504),
    ).toBe(false)
    await expect.poll(() => fake.requests[0]?.outcome).toBe('client-closed')
    const page = await (await fetch(`${harness!.url}/metrics`)).text()
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="client_closed"\} 1/)
    expect(page).not.toMatch(/deadline_expiries_total \d*[1-9]/)
  })

  it('a client that hangs up mid-stream is client_closed with status 499 too, and no stream error is logged', async () => {
    const fake = await one()
    fake.enqueue(reply.text('one two three four five six seven eight', { tokenDelayMs: 80 }))
    const controller = new AbortController()
    const stream = await harness!.client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { signal: controller.signal },
    )
    let chunks = 0
    for await (const _ of stream) if (++chunks === 2) controller.abort()
    await expect.poll(() => requestLines().length).toBe(1)
    expect(requestLines()[0]).toMatchObject({ status: 499, error: 'client_closed', stream: true })
    expect(harness!.logs.filter((l) => l.event === 'stream-interrupted')).toEqual([])
  })

  it('by default one info line per answered request, carrying who answered; an attempt that did not answer gets a warn line; logLevel debug adds the answering attempt', async () => {
    const fake = await one()
    fake.enqueue(reply.text('first'))
    fake.enqueue(openAIErrors.serverError())
    fake.enqueue(reply.text('second, after a retry'))
    const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] }
    await harness!.client.chat.completions.create(ask)
    expect(harness!.logs.map((l) => [l.event, l.level])).toEqual([['request', 'info']])
    expect(requestLines()[0]).toMatchObject({
      status: 200,
      provider: 'p',
      upstreamModel: 'model-x',
      attempts: 1,
    })

    harness!.logs.length = 0
    await harness!.client.chat.completions.create(ask)
    expect(harness!.logs.map((l) => [l.event, l.level, l['decision']])).toEqual([
      ['attempt', 'warn', 'retry'],
      ['request', 'info', undefined],
    ])
    expect(requestLines()[0]).toMatchObject({ status: 200, attempts: 2 })

    // A stream's line names who answered too.
    harness!.logs.length = 0
    fake.enqueue(reply.text('streamed'))
    const stream = await harness!.client.chat.completions.create({ ...ask, stream: true })
    for await (const _ of stream) {
      // read to the end
    }
    await expect.poll(() => requestLines().length).toBe(1)
    expect(requestLines()[0]).toMatchObject({
      status: 200,
      stream: true,
      provider: 'p',
      upstreamModel: 'model-x',
      attempts: 1,
    })
  })

  it('the request line names the id the client was given and, when it differs, the provider’s own id of the answer', async () => {
    const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] }
    // An OpenAI-compatible upstream's chatcmpl- id is passed on: one id.
    const fake = await one()
    fake.enqueue(reply.text('whole'))
    const whole = await harness!.client.chat.completions.create(ask)
    expect(whole.id).toMatch(/^chatcmpl-/)
    expect(requestLines()[0]).toMatchObject({ responseId: whole.id })
    expect(requestLines()[0]).not.toHaveProperty('providerResponseId')

    // A stream's id is minted before the provider names its own.
    harness!.logs.length = 0
    fake.enqueue(reply.text('streamed'))
    const stream = await harness!.client.chat.completions.create({ ...ask, stream: true })
    const ids = new Set<string>()
    for await (const chunk of stream) ids.add(chunk.id)
    await expect.poll(() => requestLines().length).toBe(1)
    expect(ids.size).toBe(1)
    const [streamed] = ids
    expect(requestLines()[0]).toMatchObject({ responseId: streamed })
    expect(requestLines()[0]!['providerResponseId']).toMatch(/^chatcmpl-/)
    expect(requestLines()[0]!['providerResponseId']).not.toBe(streamed)
    await harness!.close()
    harness = undefined

    // Anthropic's msg_ id is not passed on to the client, but is logged.
    const { fake: anthropic, entry } = await fakeProvider('anthropic', ['sk-ant-log-key-0001'])
    fakes.push(anthropic)
    harness = await startHarness({
      providers: { a: entry },
      models: { m: fallback(['a', 'claude-x']) },
    })
    anthropic.enqueue(reply.text('translated'))
    const translated = await harness.client.chat.completions.create(ask)
    expect(translated.id).toMatch(/^chatcmpl-/)
    expect(requestLines()[0]).toMatchObject({ responseId: translated.id })
    expect(requestLines()[0]!['providerResponseId']).toMatch(/^msg_/)
  })

  it('a request line carries at most 256 characters of the client’s path, however long the path it sent', async () => {
    await one()
    const long = `/v1/${'a'.repeat(12_000)}`
    // An unknown path (404), a method the path does not take (405), the chat path with a tail.
    for (const [method, path] of [
      ['POST', long],
      ['PUT', `/v1/chat/completions${'/b'.repeat(6_000)}`],
      ['DELETE', `/v1/models/${'c'.repeat(12_000)}`],
    ] as const) {
      const res = await fetch(`${harness!.url}${path}`, { method })
      expect(res.status, method).toBeGreaterThanOrEqual(400)
      await res.arrayBuffer()
    }
    const paths = requestLines().map((l) => String(l['path']))
    expect(paths).toHaveLength(3)
    for (const path of paths) {
      expect(path.length).toBeLessThanOrEqual(256)
      expect(path).toMatch(/^\/v1\/.*…$/)
    }
  })

  it('logLevel debug adds the answering attempt; a logLevel that is no level is refused', async () => {
    const { fake, entry } = await fakeProvider('openai', ['sk-log-key-0002'])
    fakes.push(fake)
    const config = { providers: { p: entry }, models: { m: fallback(['p', 'model-x']) } }
    harness = await startHarness(config, { logLevel: 'debug' })
    fake.enqueue(reply.text('answer'))
    await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(harness.logs.map((l) => [l.event, l.level, l['decision']])).toEqual([
      ['attempt', 'debug', 'success'],
      ['request', 'info', undefined],
    ])
    await expect(startHarness(config, { logLevel: 'verbose' as never })).rejects.toMatchObject({
      code: 'GATEWAY_OPTION_INVALID',
      message: expect.stringMatching(/logLevel/),
    })
  })

  it('error kinds print with every underscore replaced ("context too long")', async () => {
    const a = await fakeProvider('openai', ['ka'])
    const b = await fakeProvider('openai', ['kb'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'model-a'], ['b', 'model-b']) },
      policy: { maxAttempts: 1 },
    })
    a.fake.enqueue(openAIErrors.insufficientQuota())
    b.fake.enqueue(openAIErrors.serverError({ status: 500 }))
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    })
    const body = (await res.json()) as { error: { message: string } }
    expect(body.error.message).toContain('a/model-a: quota exhausted')
    expect(body.error.message).toContain('b/model-b: server error')
    expect(body.error.message).not.toContain('_')
    const { kindName } = await import('../../src/http/errorReply.js')
    expect(kindName('context_too_long')).toBe('context too long')
  })

  it('a pino logger of yours is used through a child that redacts, with requestId on each line', async () => {
    const lines: Record<string, unknown>[] = []
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)))
        done()
      },
    })
    const { fake, entry } = await fakeProvider('openai', ['sk-log-key-0001'])
    fakes.push(fake)
    harness = await startHarness(
      { providers: { p: entry }, models: { m: fallback(['p', 'model-x']) } },
      { logger: pino({ base: { service: 'my-app' } }, sink) },
    )
    await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    })
    await expect.poll(() => lines.some((l) => l['event'] === 'request')).toBe(true)
    const request = lines.find((l) => l['event'] === 'request')!
    // pino's own shape (numeric level, the app's bindings), plus the gateway's fields.
    expect(request).toMatchObject({ level: 30, service: 'my-app', status: 200, msg: 'request' })
    expect(request['requestId']).toEqual(expect.any(String))
  })
})

describe('createLog: pino redaction and the value scrub', () => {
  const KEY = 'sk-live-0123456789abcdef'

  function capture() {
    const records: LogRecord[] = []
    const { log } = createLog((r) => records.push(r), [KEY, 'tenant-secret-header'])
    return { records, log }
  }

  it('redacts credentials by path (pino redact), top level and one object down', () => {
    const { records, log } = capture()
    log('info', 'upstream', {
      authorization: 'Bearer abc',
      apiKey: 'plain-key',
      apiKeys: ['k1', 'k2'],
      headers: {
        authorization: 'Bearer def',
        'x-api-key': 'xk',
        'content-type': 'application/json',
      },
      upstream: {
        headers: { 'api-key': 'azure-key', 'x-goog-api-key': 'gk', cookie: 'c=1' },
        password: 'pw',
      },
    })
    expect(records[0]).toMatchObject({
      level: 'info',
      event: 'upstream',
      authorization: '[redacted]',
      apiKey: '[redacted]',
      apiKeys: '[redacted]',
      headers: {
        authorization: '[redacted]',
        'x-api-key': '[redacted]',
        'content-type': 'application/json',
      },
      upstream: {
        headers: { 'api-key': '[redacted]', 'x-goog-api-key': '[redacted]', cookie: '[redacted]' },
        password: '[redacted]',
      },
    })
    expect(records[0]?.time).toEqual(expect.any(Number))
  })

  it('scrubs a configured key echoed inside any string, the message included (pino paths cannot see those)', () => {
    const { records, log } = capture()
    log('warn', 'attempt', {
      message: `provider said: Incorrect API key provided: ${KEY}`,
      reason: `401 for ${KEY}; header tenant-secret-header rejected`,
      nested: { list: [`x${KEY}y`] },
    })
    const text = JSON.stringify(records)
    expect(text).not.toContain(KEY)
    expect(text).not.toContain('tenant-secret-header')
    expect(records[0]?.msg).toBe('provider said: Incorrect API key provided: [redacted]')
  })

  it('a key nested deeper than the scrub walks is scrubbed all the same; a cycle down there does not throw', () => {
    const { records, log } = capture()
    const deep: Record<string, unknown> = { j: `quoted ${KEY}` }
    let outer: Record<string, unknown> = deep
    for (const k of ['i', 'h', 'g', 'f', 'e', 'd', 'c', 'b', 'a']) outer = { [k]: outer }
    log('warn', 'app', { nested: outer })
    deep['self'] = outer
    log('warn', 'app', { nested: outer })
    expect(records).toHaveLength(2)
    expect(JSON.stringify(records)).not.toContain(KEY)
  })

  it('an Error keeps its class, message, stack and cause (scrubbed), under err or any other field; a Date stays its date', () => {
    const records: LogRecord[] = []
    const lines: string[] = []
    const own = pino({}, { write: (line: string) => lines.push(line) })
    const fn = createLog((r) => records.push(r), [KEY])
    const mine = createLog(own, [KEY])
    const error = Object.assign(
      new TypeError(`bad key ${KEY}`, { cause: new Error(`inner ${KEY}`) }),
      { code: 'E_BAD' },
    )
    for (const { log } of [fn, mine])
      log('error', 'app', { err: error, failure: error, at: new Date(0) })
    const parsed = lines.map((l) => JSON.parse(l) as LogRecord)
    for (const record of [records[0], parsed[0]]) {
      expect(record?.['err']).toMatchObject({
        type: 'TypeError',
        message: expect.stringContaining('bad key [redacted]'),
        stack: expect.stringContaining('TypeError: bad key [redacted]'),
        code: 'E_BAD',
      })
      expect(record?.['failure']).toMatchObject({
        message: 'bad key [redacted]',
        stack: expect.stringContaining('TypeError: bad key [redacted]'),
        cause: { message: 'inner [redacted]' },
        code: 'E_BAD',
      })
      expect(record?.['at']).toBe('1970-01-01T00:00:00.000Z')
    }
    expect(JSON.stringify([records, lines])).not.toContain(KEY)
  })

  it('a logger that throws never takes the caller down', () => {
    const { log } = createLog(() => {
      throw new Error('disk full')
    }, [])
    expect(() => log('info', 'x', {})).not.toThrow()
  })

  // An async function is a `(record) => void` to TypeScript: a sink that
  // ships records over the network and rejects when it is down. Its
  // rejection, left unhandled, ended the process (Node's default).
  it('an async logger that rejects never takes the process down', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      let delivered = 0
      const { log } = createLog(async () => {
        delivered++
        throw new Error('log sink down')
      }, [])
      log('warn', 'x', {})
      expect(delivered).toBe(1)
      // Node tells of an unhandled rejection once the microtasks have run, before the next turn.
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(unhandled).toEqual([])
  })

  it('a logger that hands back one pending promise for every line is handled once, not once a line (each handler kept)', () => {
    const pending = new Promise<void>(() => {})
    const then = vi.spyOn(pending, 'then')
    const { log } = createLog(() => pending as unknown as undefined, [])
    for (let i = 0; i < 100; i++) log('warn', 'x', {})
    expect(then).toHaveBeenCalledTimes(1)
  })
})
