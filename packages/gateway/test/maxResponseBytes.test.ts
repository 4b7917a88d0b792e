import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { isGatewayConfigError, parseGatewayConfig } from '../src/index.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * `providers.<name>.maxResponseBytes` and `maxStreamBytes`: @hourglass/llm's
 * adapter options, from the config. An answer (a stream, in all) past it is
 * not read on and not resent to that provider; the next in the fallback list
 * may answer.
 */
describe('providers.<name>.maxResponseBytes', () => {
  const fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    for (const fake of fakes.splice(0)) await fake.close()
    harness = undefined
  })

  const ask = () =>
    fetch(`${harness!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '5000' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })

  it('an answer longer than the limit is not read on or resent; the fallback answers', async () => {
    const long = 'x'.repeat(20_000)
    const small = await fakeProvider('openai', ['k'], { maxResponseBytes: 4096 })
    const roomy = await fakeProvider('openai', ['k'])
    fakes.push(small.fake, roomy.fake)
    small.fake.setReply(reply.text(long))
    roomy.fake.setReply(reply.text('from the roomy one'))
    harness = await startHarness({
      providers: { small: small.entry, roomy: roomy.entry },
      models: { m: fallback(['small', 'gpt'], ['roomy', 'gpt']) },
    })
    const res = await ask()
    expect(res.status).toBe(200)
    const body = (await res.json()) as { choices: { message: { content: string } }[] }
    expect(body.choices[0]?.message.content).toBe('from the roomy one')
    expect(small.fake.requests).toHaveLength(1) // not resent to the provider it overflowed
    expect(roomy.fake.requests).toHaveLength(1)
  })

  it('without a limit in the config, the same answer is read whole (32 MiB by default)', async () => {
    const long = 'x'.repeat(20_000)
    const only = await fakeProvider('openai', ['k'])
    fakes.push(only.fake)
    only.fake.setReply(reply.text(long))
    harness = await startHarness({
      providers: { p: only.entry },
      models: { m: fallback(['p', 'gpt']) },
    })
    const res = await ask()
    expect(res.status).toBe(200)
    const body = (await res.json()) as { choices: { message: { content: string } }[] }
    expect(body.choices[0]?.message.content).toBe(long)
  })

  it('providers.<name>.maxStreamBytes: a stream longer in all is not read on or resent; the fallback streams the answer', async () => {
    const long = 'x'.repeat(20_000)
    const small = await fakeProvider('openai', ['k'], { maxStreamBytes: 4096 })
    const roomy = await fakeProvider('openai', ['k'])
    fakes.push(small.fake, roomy.fake)
    small.fake.setReply(reply.text(long))
    roomy.fake.setReply(reply.text('from the roomy one'))
    harness = await startHarness({
      providers: { small: small.entry, roomy: roomy.entry },
      models: { m: fallback(['small', 'gpt'], ['roomy', 'gpt']) },
    })
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '5000' },
      body: JSON.stringify({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    })
    expect(res.status).toBe(200)
    const text = await res.text()
    const content = text
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as { choices: { delta: { content?: string } }[] })
      .map((chunk) => chunk.choices[0]?.delta.content ?? '')
      .join('')
    expect(content).toBe('from the roomy one')
    expect(small.fake.requests).toHaveLength(1) // not resent to the provider it overflowed
    expect(roomy.fake.requests).toHaveLength(1)
  })

  it.each(['maxResponseBytes', 'maxStreamBytes'])(
    'a %s that is no byte count is a config error at its field',
    (option) => {
      for (const bad of [0, -1, 1.5, '4096', null]) {
        try {
          parseGatewayConfig(
            {
              providers: {
                p: {
                  dialect: 'openai',
                  baseURL: 'http://127.0.0.1:1/v1',
                  apiKeys: ['k'],
                  [option]: bad,
                },
              },
              models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
            },
            { env: {} },
          )
          expect.unreachable(`${option} ${String(bad)} was accepted`)
        } catch (error) {
          expect(isGatewayConfigError(error)).toBe(true)
          expect((error as { problems: { field: string }[] }).problems.map((p) => p.field)).toEqual(
            [`providers.p.${option}`],
          )
        }
      }
    },
  )
})
