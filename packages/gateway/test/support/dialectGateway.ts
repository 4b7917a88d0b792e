import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { afterAll, beforeAll } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './harness.js'

export interface DialectGateway {
  /** The official client pointed at the gateway (from the file's beforeAll on). */
  readonly client: OpenAI
  /** The fake provider of `dialect`, where model `m-${dialect}` goes. */
  fake(dialect: ProviderDialect): FakeProvider
}

/**
 * One gateway for a file's tests with a fake provider of each dialect (key
 * `k`), model `m-<dialect>` routed to it alone: call it at the top of the
 * file. Started before the first test, closed after the last.
 */
export function dialectGateway(dialects: ProviderDialect[]): DialectGateway {
  const fakes = new Map<ProviderDialect, FakeProvider>()
  let harness: Harness | undefined
  beforeAll(async () => {
    const providers: Record<string, unknown> = {}
    const models: Record<string, unknown> = {}
    for (const dialect of dialects) {
      const { fake, entry } = await fakeProvider(dialect, ['k'])
      fakes.set(dialect, fake)
      providers[dialect] = entry
      models[`m-${dialect}`] = fallback([dialect, `up-${dialect}`])
    }
    harness = await startHarness({ providers, models })
  })
  afterAll(async () => {
    await harness?.close()
    for (const fake of fakes.values()) await fake.close()
  })
  return {
    get client() {
      if (harness === undefined)
        throw new Error('the gateway starts in beforeAll: use it in a test')
      return harness.client
    },
    fake(dialect) {
      const fake = fakes.get(dialect)
      if (fake === undefined) throw new Error(`no fake provider of dialect ${dialect}`)
      return fake
    },
  }
}
