import type { FakeProvider } from '@hourglass/testkit'
import { afterAll, beforeAll } from 'vitest'
import { fakeProvider, type Harness, startHarness } from './harness.js'

export interface OpenAIGateway {
  /** The gateway (from the enclosing suite's beforeAll on). */
  readonly harness: Harness
  /** The fake OpenAI provider `p` behind it. */
  readonly fake: FakeProvider
}

/**
 * One gateway for a suite's tests in front of one fake OpenAI provider
 * named `p` (key `k`): `config` is the rest of the gateway config (`models`
 * routed to `p`, `aliases`). Call it in a `describe` (or at the top of the
 * file): started before its first test, closed after its last.
 */
export function openAIGateway(config: Record<string, unknown>): OpenAIGateway {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  beforeAll(async () => {
    const p = await fakeProvider('openai', ['k'])
    fake = p.fake
    harness = await startHarness({ providers: { p: p.entry }, ...config })
  })
  afterAll(async () => {
    await harness?.close()
    await fake?.close()
  })
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the gateway starts in beforeAll: use it in a test')
    return value
  }
  return {
    get harness() {
      return started(harness)
    },
    get fake() {
      return started(fake)
    },
  }
}
