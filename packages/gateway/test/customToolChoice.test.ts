import { BadRequestError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * Custom tools (`type: "custom"`) are refused; a `tool_choice` naming one
 * was forwarded to OpenAI-compatible providers as an unknown kind of choice,
 * pointing at a tool the request could not carry. Refused the same way.
 */
describe('tool_choice of a custom tool', () => {
  let harness: Harness | undefined
  let closeFake: (() => Promise<void>) | undefined
  afterEach(async () => {
    await harness?.close()
    await closeFake?.()
    harness = undefined
  })

  const cases = [
    ['tool_choice.type', { type: 'custom', custom: { name: 'grep' } }],
    [
      'tool_choice.allowed_tools.tools[1].type',
      {
        type: 'allowed_tools',
        allowed_tools: {
          mode: 'auto',
          tools: [
            { type: 'function', function: { name: 'grep' } },
            { type: 'custom', custom: { name: 'grep' } },
          ],
        },
      },
    ],
  ] as const
  for (const dialect of ['openai', 'deepseek'] as const)
    for (const [param, choice] of cases)
      it(`is a 400 naming ${param}, and nothing is sent (${dialect})`, async () => {
        const { fake, entry } = await fakeProvider(dialect, ['sk-custom-choice-0001'])
        closeFake = () => fake.close()
        harness = await startHarness({
          providers: { p: entry },
          models: { small: fallback(['p', 'some-model']) },
        })
        const error = await harness.client.chat.completions
          .create({
            model: 'small',
            messages: [{ role: 'user', content: 'hi' }],
            tools: [{ type: 'function', function: { name: 'grep' } }],
            // biome-ignore lint/suspicious/noExplicitAny: kinds the SDK's types may not list
            tool_choice: choice as any,
          })
          .catch((e: unknown) => e)
        expect(error).toBeInstanceOf(BadRequestError)
        expect(error).toMatchObject({ status: 400, param })
        expect((error as Error).message).toContain('only function tools')
        expect(fake.requests).toHaveLength(0)
      })
})
