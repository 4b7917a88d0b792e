import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import type { FakeProvider } from '@hourglass/testkit'
import { afterAll, describe, expect, it } from 'vitest'
import { setProviderHeader } from '../src/http/setProviderHeader.js'
import { type GatewayConfigError, parseGatewayConfig } from '../src/index.js'
import { fakeProvider, fallback, startHarness } from './support/harness.js'

/**
 * A provider's name is sent in every non-streamed answer's
 * `x-hourglass-provider` header: one that is not a valid header value
 * (`通义`, a control character) made every paid answer a 500, and `zürich`
 * arrived garbled. Such names are refused when the config is read, each at
 * its field with the config's other problems; the header write itself never
 * throws after a paid answer.
 */
const entry = { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] }

function problemsOf(config: unknown): GatewayConfigError['problems'] {
  try {
    parseGatewayConfig(config)
  } catch (error) {
    return (error as GatewayConfigError).problems
  }
  return []
}

describe('provider names', () => {
  it('one that is no plain token is refused at its field, with every other problem', () => {
    const bad = ['通义', 'a\nb', 'zürich', 'sp ace', 'tab\t']
    const problems = problemsOf({
      providers: {
        ...Object.fromEntries(bad.map((name) => [name, entry])),
        ok: { ...entry, dialect: 'nope' },
      },
      models: { m: fallback(['通义', 'q']) },
    })
    expect(problems.map((p) => p.field).sort()).toEqual(
      [...bad.map((name) => `providers[${JSON.stringify(name)}]`), 'providers.ok.dialect'].sort(),
    )
    for (const problem of problems.filter((p) => p.field !== 'providers.ok.dialect')) {
      expect(problem.message).toMatch(/letters, digits and - _ \. : \/ only/)
    }
  })

  it('letters, digits, - _ . : / are accepted', () => {
    const names = ['qwen', 'Azure-East_2', 'vendor.eu', 'org/team:prod']
    expect(
      problemsOf({
        providers: Object.fromEntries(names.map((name) => [name, entry])),
        models: { m: fallback(...names.map((name) => [name, 'x'] as [string, string])) },
      }),
    ).toEqual([])
  })

  describe('through the gateway', () => {
    let fake: FakeProvider | undefined
    afterAll(async () => {
      await fake?.close()
    })

    it('a name with / and : is the answer’s x-hourglass-provider', async () => {
      const provider = await fakeProvider('openai', ['k'])
      fake = provider.fake
      const harness = await startHarness({
        providers: { 'org/team:prod': provider.entry },
        models: { m: fallback(['org/team:prod', 'gpt']) },
      })
      try {
        const res = await fetch(`${harness.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
        })
        expect(res.status).toBe(200)
        expect(res.headers.get('x-hourglass-provider')).toBe('org/team:prod')
        await res.text()
      } finally {
        await harness.close()
      }
    })
  })

  it('the header write after a paid answer never throws: a name no header can carry is left out', () => {
    const res = new ServerResponse(new IncomingMessage(new Socket()))
    expect(() => setProviderHeader(res, '通义')).not.toThrow()
    expect(() => setProviderHeader(res, 'a\nb')).not.toThrow()
    expect(res.getHeader('x-hourglass-provider')).toBeUndefined()
    setProviderHeader(res, 'qwen')
    expect(res.getHeader('x-hourglass-provider')).toBe('qwen')
  })
})
