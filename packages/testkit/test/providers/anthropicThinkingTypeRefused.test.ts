import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { postAnthropicMessages } from '../support/fakeChat.js'

/**
 * A `thinking.type` the model does not take is Anthropic's 400 (platform.
 * claude.com, "Troubleshooting thinking"). The fake answered 200: adaptive
 * thinking on Sonnet 4.5 came back thought, `between_tools` on Opus 5.5 —
 * whose thinking is always on — came back unthought, and a client built
 * against the fake failed every call against the API.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

interface Answer {
  type?: string
  error?: { type?: string; message: string }
  content?: { type: string }[]
}

async function send(model: string, body: Record<string, unknown>) {
  fake ??= await startFakeProvider({
    dialect: 'anthropic',
    reply: reply.text('ok', { thinking: 'hmm', signature: 'sig-1' }),
  })
  const res = await postAnthropicMessages(fake.baseURL, body, { model, maxTokens: 4096 })
  return { status: res.status, json: (await res.json()) as Answer }
}

const ADAPTIVE = { thinking: { type: 'adaptive' } }
const BETWEEN_TOOLS = { thinking: { type: 'between_tools' } }

describe('the Anthropic fake refuses a thinking.type the model does not take', () => {
  it('refuses adaptive thinking on the models that think on a budget only', async () => {
    for (const model of [
      'claude-sonnet-4-5',
      'claude-sonnet-4-5-20250929',
      'claude-haiku-4-5',
      'claude-opus-4-5',
      'claude-opus-4-1',
      'claude-opus-4-20250514',
      'claude-sonnet-4-20250514',
      'claude-3-7-sonnet-20250219',
      'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'claude-3-7-sonnet@20250219',
    ]) {
      const { status, json } = await send(model, ADAPTIVE)
      expect(status, model).toBe(400)
      expect(json.error).toMatchObject({
        type: 'invalid_request_error',
        message:
          '"thinking.type.adaptive" is not supported for this model. Use "thinking.type.enabled" with budget_tokens.',
      })
      // The budget form is what they take.
      const budget = await send(model, { thinking: { type: 'enabled', budget_tokens: 1024 } })
      expect(budget.status, model).toBe(200)
    }
    expect(fake?.requests.filter((r) => r.outcome === 'error')).toHaveLength(10)
  })

  it('refuses thinking on the Claude 3 models before 3.7 Sonnet, which do not think', async () => {
    // The fake answered them thought: a client that turned thinking on for
    // Claude 3.5 Haiku passed here and met the API's 400.
    for (const model of [
      'claude-3-5-haiku-20241022',
      'claude-3-5-sonnet-20241022',
      'claude-3-opus-20240229',
      'claude-3-haiku-20240307',
      'anthropic.claude-3-5-sonnet-20240620-v1:0',
    ]) {
      for (const thinking of [{ type: 'enabled', budget_tokens: 1024 }, { type: 'adaptive' }]) {
        const { status, json } = await send(model, { thinking })
        expect(status, model).toBe(400)
        expect(json.error).toMatchObject({
          type: 'invalid_request_error',
          message: `'${model}' does not support thinking.`,
        })
      }
      // Without thinking, or with it turned off, they answer.
      expect((await send(model, {})).status, model).toBe(200)
      expect((await send(model, { thinking: { type: 'disabled' } })).status, model).toBe(200)
    }
  })

  it('answers adaptive thinking, thought, where it is taken — and on a name that says no version', async () => {
    for (const model of [
      'claude-opus-4-6',
      'claude-sonnet-4-6',
      'anthropic.claude-opus-4-6-v1',
      'claude-opus-4-7',
      'claude-sonnet-5',
      'claude-haiku-5-5',
      'claude-opus-5-5',
      'claude-fable-5',
      'claude-mythos-preview',
      'claude-sonnet-latest',
    ]) {
      const { status, json } = await send(model, ADAPTIVE)
      expect(status, model).toBe(200)
      expect(json.content?.map((b) => b.type)).toEqual(['thinking', 'text'])
    }
  })

  it('refuses a type the API does not know, on every model', async () => {
    for (const model of ['claude-sonnet-4-5', 'claude-opus-5-5', 'claude-fable-5', 'claude-x']) {
      for (const type of ['on', 'auto', 'Adaptive', 7]) {
        const { status, json } = await send(model, { thinking: { type } })
        expect(status, `${model} ${type}`).toBe(400)
        expect(json.error?.message).toBe(
          `thinking: Input tag '${type}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive', 'between_tools'`,
        )
      }
      const untyped = await send(model, { thinking: { display: 'summarized' } })
      expect(untyped.status, model).toBe(400)
      expect(untyped.json.error?.message).toBe(
        "thinking: Unable to extract tag using discriminator 'type'",
      )
      for (const thinking of ['adaptive', true, [{ type: 'adaptive' }]]) {
        const odd = await send(model, { thinking })
        expect(odd.status, `${model} ${JSON.stringify(thinking)}`).toBe(400)
        expect(odd.json.error?.message).toBe(
          'thinking: Input should be a valid dictionary or object to extract fields from',
        )
      }
    }
    expect(fake?.paidGenerations).toBe(0)
  })

  it('refuses between_tools but on Sonnet 5.5, the always-thinking models among them', async () => {
    for (const model of [
      'claude-opus-5-5',
      'claude-opus-6',
      'claude-fable-5',
      'claude-fable-5-1',
      'claude-mythos-5',
      'claude-sonnet-5',
      'claude-haiku-5-5',
      'claude-opus-4-8',
      'claude-sonnet-4-6',
      'claude-sonnet-4-5',
    ]) {
      const { status, json } = await send(model, BETWEEN_TOOLS)
      expect(status, model).toBe(400)
      expect(json.error?.message).toBe(
        '"thinking.type.between_tools" is not supported for this model.',
      )
    }
    expect(fake?.paidGenerations).toBe(0)
  })

  it('takes between_tools on Sonnet 5.5 at effort high or below, answered without up-front thinking', async () => {
    for (const model of ['claude-sonnet-5-5', 'claude-sonnet-5-5-20260928', 'claude-sonnet-6']) {
      for (const effort of [undefined, 'low', 'medium', 'high']) {
        const body = { ...BETWEEN_TOOLS, ...(effort ? { output_config: { effort } } : {}) }
        const { status, json } = await send(model, body)
        expect(status, `${model} ${effort}`).toBe(200)
        expect(json.content?.map((b) => b.type)).toEqual(['text'])
      }
      // Above high it is refused: between_tools is thinking turned off.
      for (const effort of ['xhigh', 'max']) {
        const { status, json } = await send(model, { ...BETWEEN_TOOLS, output_config: { effort } })
        expect(status, `${model} ${effort}`).toBe(400)
        expect(json.error?.message).toBe(
          `output_config.effort '${effort}' is not supported when thinking is disabled on this model. Use effort 'high' or below, or enable thinking.`,
        )
      }
      // Left out, Sonnet 5.5 thinks.
      const asked = await send(model, {})
      expect(asked.json.content?.map((b) => b.type)).toEqual(['thinking', 'text'])
    }
  })

  it('refuses thinking turned off on Sonnet 5.5 in its own words, which name between_tools', async () => {
    for (const model of ['claude-sonnet-5-5', 'claude-sonnet-6']) {
      const { status, json } = await send(model, { thinking: { type: 'disabled' } })
      expect(status, model).toBe(400)
      expect(json.error?.message).toBe(
        '"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" for the lowest thinking setting, or "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
      )
    }
    // Sonnet 5 still stops thinking at `disabled`.
    const sonnet5 = await send('claude-sonnet-5', { thinking: { type: 'disabled' } })
    expect(sonnet5.status).toBe(200)
    expect(sonnet5.json.content?.map((b) => b.type)).toEqual(['text'])
  })
})
