import { NotFoundError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * `client.models.retrieve(id)` (`GET /v1/models/{id}`) answers what the list
 * says of the model, for entries and aliases alike, and an unknown one in
 * OpenAI's error shape.
 */
describe('GET /v1/models/{id} through the official client', () => {
  let harness: Harness | undefined
  let closeFake: (() => Promise<void>) | undefined
  afterEach(async () => {
    await harness?.close()
    await closeFake?.()
    harness = undefined
  })

  async function start() {
    const { fake, entry } = await fakeProvider('openai', ['sk-models-key-0001'])
    closeFake = () => fake.close()
    harness = await startHarness({
      providers: { p: entry },
      models: { small: fallback(['p', 'gpt-4o-mini']) },
      aliases: { 'gpt-4o-mini': 'small', 'org/vendor-model': 'small' },
    })
    return fake
  }

  it('retrieves an entry and an alias in OpenAI shape, as the list describes them', async () => {
    const fake = await start()
    const listed = new Map<string, unknown>()
    for await (const model of harness!.client.models.list()) listed.set(model.id, model)
    for (const id of ['small', 'gpt-4o-mini', 'org/vendor-model']) {
      const model = await harness!.client.models.retrieve(id)
      expect(model, id).toEqual({ id, object: 'model', created: 0, owned_by: 'hourglass' })
      expect(model, id).toEqual(listed.get(id))
    }
    expect(fake.requests).toHaveLength(0)
  })

  it('an unknown model is a 404 model_not_found in OpenAI’s error shape, and so is an inherited name', async () => {
    await start()
    for (const id of ['gpt-5', 'constructor', '__proto__']) {
      const error = await harness!.client.models.retrieve(id).catch((e: unknown) => e)
      expect(error, id).toBeInstanceOf(NotFoundError)
      expect(error, id).toMatchObject({
        status: 404,
        type: 'invalid_request_error',
        code: 'model_not_found',
        param: 'model',
      })
      expect((error as Error).message, id).toContain(id)
    }
  })

  it('an unknown model’s name is echoed escaped and bounded: no line break, NUL, escape or bidi override of its own', async () => {
    await start()
    const cases = [
      ['gpt-4o\n', '"gpt-4o\\n"'],
      ['a\u0000b\u001b[31m"q"\\', '"a\\u0000b\\u001b[31m\\"q\\"\\\\"'],
      ['\u202eevil\u2028x', '"\\u202eevil\\u2028x"'],
    ] as const
    // The refusal, as openai-node raises it, from either path.
    const refused = (answer: Promise<unknown>) =>
      answer.then(
        () => undefined,
        (e: unknown) => e as NotFoundError,
      )
    const messageOf = (error: NotFoundError | undefined) =>
      String((error?.error as { message?: unknown } | undefined)?.message)
    const chat = (model: string) =>
      refused(
        harness!.client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'x' }],
        }),
      )
    const retrieve = (id: string) => refused(harness!.client.models.retrieve(id))
    for (const [id, shown] of cases) {
      for (const error of [await retrieve(id), await chat(id)]) {
        expect(error, id).toMatchObject({ status: 404, code: 'model_not_found' })
        const message = messageOf(error)
        expect(message, id).toBe(
          `the model ${shown} does not exist on this gateway (GET /v1/models lists them)`,
        )
      }
    }
    // Bounded, whole escapes only: never a cut one ("\u00…").
    const long = `${'\u0000'.repeat(30)}${'x'.repeat(300)}`
    for (const error of [await retrieve(long), await chat(long.slice(0, 256))]) {
      const message = messageOf(error)
      expect(message).toMatch(/^the model "(\\u0000){16}…" does not exist/)
      expect(message).not.toMatch(/[\p{Cc}\p{Cf}]/u)
    }
  })

  it('an id that is not valid percent-encoding is a 400 in OpenAI’s error shape, not a 500', async () => {
    await start()
    for (const id of ['%E0%A4%A', '%']) {
      const res = await fetch(`${harness!.url}/v1/models/${id}`)
      expect(res.status, id).toBe(400)
      expect(await res.json(), id).toMatchObject({
        error: { type: 'invalid_request_error', code: 'invalid_request' },
      })
    }
  })

  it('another method on a model is a 405 naming GET', async () => {
    await start()
    const res = await fetch(`${harness!.url}/v1/models/small`, { method: 'DELETE' })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD')
    expect(await res.json()).toMatchObject({ error: { code: 'method_not_allowed' } })
  })
})
