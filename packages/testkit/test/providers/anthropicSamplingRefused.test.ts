import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

/**
 * Sampling settings Anthropic refuses before generating, by model and by
 * API version, which the fake answered with its scripted 200; and the API
 * version the official SDKs send today, which it refused.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

async function ask(
  fields: Record<string, unknown>,
  version = '2023-06-01',
): Promise<{ status: number; message: string | undefined }> {
  fake ??= await startFakeProvider({ dialect: 'anthropic', reply: reply.text('generated') })
  const res = await fetch(`${fake.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': version },
    body: JSON.stringify({
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
      ...fields,
    }),
  })
  const json = (await res.json()) as { error?: { type: string; message: string } }
  if (res.status !== 200) expect(json.error?.type).toBe('invalid_request_error')
  return { status: res.status, message: json.error?.message }
}

describe('anthropic-version 2026-10-21 (the official SDKs’ current majors)', () => {
  it('is answered, as 2023-06-01 is', async () => {
    expect(await ask({ model: 'claude-sonnet-4-5' }, '2026-10-21')).toEqual({
      status: 200,
      message: undefined,
    })
  })

  it('takes no temperature, top_p or top_k, on any model, at any value', async () => {
    for (const [field, value] of [
      ['temperature', 1],
      ['top_p', 1],
      ['top_k', 40],
    ] as const) {
      expect(await ask({ model: 'claude-3-5-haiku-latest', [field]: value }, '2026-10-21')).toEqual(
        { status: 400, message: `${field}: Extra inputs are not permitted` },
      )
    }
    expect(fake?.paidGenerations).toBe(0)
  })

  it('reads a sampling key set to null as sent: the schema has no such key', async () => {
    // An OpenAI-style client serialises an unset setting as null; the older
    // versions read it as left out, 2026-10-21 refuses the key (the fake
    // read it as left out there too, and answered).
    for (const field of ['temperature', 'top_p', 'top_k']) {
      expect(await ask({ model: 'claude-sonnet-4-5', [field]: null }, '2026-10-21')).toEqual({
        status: 400,
        message: `${field}: Extra inputs are not permitted`,
      })
      expect((await ask({ model: 'claude-sonnet-4-5', [field]: null })).status).toBe(200)
    }
  })
})

describe('Opus 4.7 and later, and the Claude 5 models: sampling deprecated', () => {
  it.each(['claude-opus-4-7', 'claude-opus-4-8-20260601', 'claude-sonnet-5', 'claude-fable-5'])(
    '%s: a temperature but 1, a top_p but 0.99, any top_k: 400, the scripted answer not given',
    async (model) => {
      expect(await ask({ model, temperature: 0.7 })).toEqual({
        status: 400,
        message: '`temperature` is deprecated for this model.',
      })
      expect(await ask({ model, temperature: 0 })).toMatchObject({ status: 400 })
      // Above 0.95 too (the fake took 0.95 to 1): any but the default 0.99.
      for (const top_p of [0.9, 0.95, 0.97, 1]) {
        expect(await ask({ model, top_p })).toEqual({
          status: 400,
          message: '`top_p` is deprecated for this model.',
        })
      }
      // The fake took any top_k.
      expect(await ask({ model, top_k: 40 })).toEqual({
        status: 400,
        message: '`top_k` is deprecated for this model.',
      })
      expect(fake?.paidGenerations).toBe(0)
      // The defaults alone, or none at all: answered.
      for (const fields of [{ temperature: 1 }, { top_p: 0.99 }, {}, { temperature: null }]) {
        expect((await ask({ model, ...fields })).status).toBe(200)
      }
    },
  )

  it('temperature and top_p together, even at their defaults: 400', async () => {
    // The fake answered `temperature: 1, top_p: 0.95` (each alone taken).
    for (const model of ['claude-opus-4-7', 'claude-sonnet-5', 'claude-opus-5-5']) {
      expect(await ask({ model, temperature: 1, top_p: 0.99 })).toEqual({
        status: 400,
        message:
          '`temperature` and `top_p` cannot both be specified for this model. Please use only one.',
      })
    }
  })
})

describe('Opus 4.1–4.6, Sonnet and Haiku 4.5 and 4.6: one sampler', () => {
  it.each([
    'claude-sonnet-4-5-20250929',
    'claude-haiku-4-5',
    'claude-opus-4-1',
    'claude-sonnet-4-6',
  ])('%s: temperature and top_p together: 400; either alone: answered', async (model) => {
    expect(await ask({ model, temperature: 0.5, top_p: 0.9 })).toEqual({
      status: 400,
      message:
        '`temperature` and `top_p` cannot both be specified for this model. Please use only one.',
    })
    expect((await ask({ model, temperature: 0.5 })).status).toBe(200)
    expect((await ask({ model, top_p: 0.9 })).status).toBe(200)
  })

  it('earlier models (Sonnet 4, Opus 4, Claude 3.x) take both', async () => {
    for (const model of [
      'claude-sonnet-4-20250514',
      'claude-opus-4-0',
      'claude-3-7-sonnet-latest',
    ]) {
      expect((await ask({ model, temperature: 0.5, top_p: 0.9 })).status).toBe(200)
    }
  })
})
