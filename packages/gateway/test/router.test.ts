import { anthropicErrors, type FakeProvider, reply } from '@hourglass/testkit'
import express from 'express'
import express4 from 'express4'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway } from '../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

describe('the gateway router', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function smallAndLarge() {
    const small = await fakeProvider('qwen', ['k-small'])
    const large = await fakeProvider('anthropic', ['k-large'])
    fakes.push(small.fake, large.fake)
    small.fake.setReply(reply.text('small model here'))
    large.fake.setReply(reply.text('large model here'))
    harness = await startHarness({
      providers: { qwen: small.entry, claude: large.entry },
      models: {
        small: fallback(['qwen', 'qwen-turbo']),
        large: fallback(['claude', 'claude-sonnet']),
        auto: { route: { small: 'small', large: 'large', maxSmallPromptTokens: 200 } },
      },
      aliases: { 'gpt-4o-mini': 'small', default: 'auto' },
    })
    return { small: small.fake, large: large.fake }
  }

  it('routes a short, tool-free request to the small model and a long one or one with tools to the large', async () => {
    const { small, large } = await smallAndLarge()
    const ask = async (content: string, tools = false) => {
      const completion = await harness!.client.chat.completions.create({
        model: 'default',
        messages: [{ role: 'user', content }],
        ...(tools
          ? {
              tools: [
                {
                  type: 'function' as const,
                  function: { name: 'f', parameters: { type: 'object' } },
                },
              ],
            }
          : {}),
      })
      return completion.choices[0]?.message.content
    }
    expect(await ask('short question')).toBe('small model here')
    expect(await ask('word '.repeat(2000))).toBe('large model here')
    expect(await ask('short, with tools', true)).toBe('large model here')
    expect(small.requests.map((r) => r.model)).toEqual(['qwen-turbo'])
    expect(large.requests.map((r) => r.model)).toEqual(['claude-sonnet', 'claude-sonnet'])
    expect(harness!.logs.filter((l) => l.event === 'request').map((l) => l['route'])).toEqual([
      'small:small',
      'large:large',
      'large:large',
    ])
  })

  it('GET /v1/models lists every model and alias, as the openai client reads it', async () => {
    await smallAndLarge()
    const ids: string[] = []
    for await (const model of harness!.client.models.list()) ids.push(model.id)
    expect(ids).toEqual(['small', 'large', 'auto', 'gpt-4o-mini', 'default'])
  })

  it('GET /healthz is liveness; GET /readyz is readiness with where limits are counted', async () => {
    await smallAndLarge()
    const health = await fetch(`${harness!.url}/healthz`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: 'ok' })
    const ready = await fetch(`${harness!.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(ready.headers.get('cache-control')).toBe('no-store')
    expect(await ready.json()).toEqual({ status: 'ready', redis: 'none' })
  })

  it('startGateway (a bare node:http server around the router): unknown paths 404 in OpenAI error shape, HEAD answers like GET without a body, OPTIONS is a 405 listing the methods', async () => {
    const { small } = await smallAndLarge()
    for (const [method, path] of [
      ['GET', '/nope'],
      ['POST', '/v1/nope'],
    ] as const) {
      const res = await fetch(`${harness!.url}${path}`, { method })
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await res.json()).toEqual({
        error: {
          message: `no route for ${method} "${path}": this gateway serves POST /v1/chat/completions, GET /v1/models and GET /v1/models/{id}`,
          type: 'invalid_request_error',
          param: null,
          code: 'not_found',
        },
      })
    }
    const head = await fetch(`${harness!.url}/healthz`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    const options = await fetch(`${harness!.url}/v1/chat/completions`, { method: 'OPTIONS' })
    // Was Express's own 200 text/plain "POST", never logged: now the gateway's 405, as any other method.
    expect(options.status).toBe(405)
    expect(options.headers.get('allow')).toBe('POST')
    expect(small.requests).toHaveLength(0)
  })

  it("a gateway path asked with a method it does not serve: 405 with Allow in OpenAI's error shape, counted as method_not_allowed, not a 404 that says the route is missing", async () => {
    const { small } = await smallAndLarge()
    for (const [method, path, allow] of [
      ['GET', '/v1/chat/completions', 'POST'],
      ['PUT', '/v1/chat/completions', 'POST'],
      ['DELETE', '/v1/chat/completions', 'POST'],
      ['POST', '/v1/models', 'GET, HEAD'],
      ['DELETE', '/v1/models', 'GET, HEAD'],
      ['POST', '/healthz', 'GET, HEAD'],
      ['POST', '/readyz', 'GET, HEAD'],
      ['POST', '/metrics', 'GET, HEAD'],
    ] as const) {
      const res = await fetch(`${harness!.url}${path}`, { method })
      expect(`${method} ${path}: ${res.status} allow ${res.headers.get('allow')}`).toBe(
        `${method} ${path}: 405 allow ${allow}`,
      )
      expect(await res.json()).toEqual({
        error: {
          message: `${method} is not allowed here (allowed: ${allow})`,
          type: 'invalid_request_error',
          param: null,
          code: 'method_not_allowed',
        },
      })
    }
    // Counted as API requests are: the five under /v1/, not the probes and the scrape.
    const page = await (await fetch(`${harness!.url}/metrics`)).text()
    expect(page).toMatch(/hourglass_gateway_errors_total\{kind="method_not_allowed"[^}]*\} 5\b/)
    // One request line each, saying what was refused.
    expect(harness!.logs.filter((l) => l.event === 'request')[0]).toMatchObject({
      path: '/v1/chat/completions',
      status: 405,
      error: 'method_not_allowed',
    })
    expect(small.requests).toHaveLength(0)
  })

  it('bad requests get 400/404 in OpenAI error shape naming the field, and reach no provider', async () => {
    const { small, large } = await smallAndLarge()
    const post = async (body: string) => {
      const res = await fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      return { status: res.status, body: await res.json() }
    }
    expect(await post('{"model": "small", "messages": [')).toEqual({
      status: 400,
      body: {
        error: {
          message: 'the body is not valid JSON',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_json',
        },
      },
    })
    expect(
      await post(JSON.stringify({ model: 'small', messages: [{ role: 'robot', content: 'x' }] })),
    ).toMatchObject({
      status: 400,
      body: { error: { param: 'messages[0].role', type: 'invalid_request_error' } },
    })
    expect(await post(JSON.stringify({ model: 'small', messages: [] }))).toMatchObject({
      status: 400,
      body: { error: { param: 'messages' } },
    })
    expect(
      await post(JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'x' }] })),
    ).toMatchObject({
      status: 404,
      body: { error: { code: 'model_not_found', param: 'model' } },
    })
    // Strict, as body-parser's: an object or an array, JSON whitespace before it allowed.
    for (const notAnObject of ['  "a string"', '\n\t 42', 'null', '\u2028{}', ' \r\n ']) {
      expect((await post(notAnObject)).body).toMatchObject({ error: { code: 'invalid_json' } })
    }
    expect(
      await post(
        ` \r\n\t${JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'x' }] })}`,
      ),
    ).toMatchObject({ status: 404, body: { error: { code: 'model_not_found' } } })
    expect(small.requests.length + large.requests.length).toBe(0)
  })

  it('a value of the right type but out of range is told its range, not "expected a number" or "expected a string"', async () => {
    const { small, large } = await smallAndLarge()
    const messageFor = async (fields: Record<string, unknown>) => {
      const res = await fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'small',
          messages: [{ role: 'user', content: 'x' }],
          ...fields,
        }),
      })
      expect(res.status).toBe(400)
      return ((await res.json()) as { error: { message: string } }).error.message
    }
    expect(await messageFor({ temperature: 3 })).toBe('temperature: expected a number from 0 to 2')
    expect(await messageFor({ top_p: 1.5 })).toBe('top_p: expected a number from 0 to 1')
    expect(await messageFor({ presence_penalty: -5 })).toBe(
      'presence_penalty: expected a number from -2 to 2',
    )
    expect(await messageFor({ model: '' })).toBe('model: expected a non-empty string')
    expect(await messageFor({ model: 'm'.repeat(257) })).toBe(
      'model: expected at most 256 characters',
    )
    expect(await messageFor({ messages: [] })).toBe('messages: expected at least one message')
    expect(await messageFor({ user: 'u'.repeat(1025) })).toBe(
      'user: expected at most 1024 characters',
    )
    expect(await messageFor({ seed: 1.5 })).toBe(
      'seed: expected an integer from -(2^53 - 1) to 2^53 - 1',
    )
    expect(await messageFor({ logit_bias: { '50256': -101 } })).toBe(
      'logit_bias["50256"]: expected a number from -100 to 100',
    )
    expect(small.requests.length + large.requests.length).toBe(0)
  })

  it('all providers overloaded → 503 naming each provider, without upstream text', async () => {
    const a = await fakeProvider('anthropic', ['k1'])
    const b = await fakeProvider('anthropic', ['k2'])
    fakes.push(a.fake, b.fake)
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'claude-x'], ['b', 'claude-y']) },
      policy: { maxAttempts: 1, max529Retries: 0 },
    })
    a.fake.setReply(anthropicErrors.overloaded())
    b.fake.setReply(anthropicErrors.overloaded())
    const overloaded = await harness.client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)
    expect(overloaded).toMatchObject({ status: 503, code: 'overloaded' })
    expect((overloaded as Error).message).toContain('a/claude-x: overloaded')
    expect((overloaded as Error).message).not.toContain('Overloaded')
  })

  it('all providers unreachable → 502 naming providers, never hosts or socket errors', async () => {
    const a = await fakeProvider('openai', ['k1'])
    const b = await fakeProvider('gemini', ['k2'])
    await a.fake.close()
    await b.fake.close()
    harness = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'gpt-x'], ['b', 'gemini-y']) },
      policy: { maxAttempts: 1 },
    })
    const down = await harness.client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e)
    expect(down).toMatchObject({ status: 502, code: 'upstream_unreachable' })
    expect((down as Error).message).toContain(
      'no provider could answer (a/gpt-x: network; b/gemini-y: network)',
    )
    expect((down as Error).message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/)
  })

  it('mounts under an app that already runs deadline(), with the app owning the budget', async () => {
    const { fake, entry } = await fakeProvider('openai', ['k'])
    fakes.push(fake)
    const gateway = createGateway(
      { providers: { o: entry }, models: { m: fallback(['o', 'gpt']) } },
      { mountDeadline: false, logger: () => {} },
    )
    const app = express()
    app.use('/llm', gateway)
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    try {
      const { port } = server.address() as { port: number }
      const res = await fetch(`http://127.0.0.1:${port}/llm/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      })
      expect(res.status).toBe(200)
      // Without deadline() the config's default budget applies (60 s, less the reply reserve).
      const sent = Number(fake.requests[0]?.headers['x-deadline-remaining-ms'])
      expect(sent).toBeGreaterThan(50_000)
      expect(sent).toBeLessThanOrEqual(60_000)
    } finally {
      await new Promise((resolve) => server.close(resolve))
      await gateway.close()
    }
  })

  it('mounts in an Express 4 app, streaming included', async () => {
    const { fake, entry } = await fakeProvider('gemini', ['k'])
    fakes.push(fake)
    fake.setReply(reply.text('served under express 4'))
    const gateway = createGateway(
      { providers: { g: entry }, models: { m: fallback(['g', 'gemini-x']) } },
      { logger: () => {} },
    )
    const app = express4()
    app.use(gateway)
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    try {
      const { port } = server.address() as { port: number }
      const client = new OpenAI({
        baseURL: `http://127.0.0.1:${port}/v1`,
        apiKey: 'x',
        maxRetries: 0,
      })
      const whole = await client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
      expect(whole.choices[0]?.message.content).toBe('served under express 4')
      const stream = await client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      })
      let text = ''
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
      expect(text).toBe('served under express 4')
      const bad = await client.chat.completions
        .create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e)
      expect(bad).toMatchObject({ status: 404, code: 'model_not_found' })
    } finally {
      await new Promise((resolve) => server.close(resolve))
      await gateway.close()
    }
  })
})
