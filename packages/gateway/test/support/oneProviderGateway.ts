import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import { fakeProvider, fallback, type Harness, startHarness } from './harness.js'

/** Reads a raw SSE response, decoding every network chunk on its own with a fatal decoder. */
export async function readRaw(res: Response): Promise<{ text: string; chunks: number }> {
  const reader = res.body!.getReader()
  let text = ''
  let chunks = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return { text, chunks }
    chunks++
    // Throws on any chunk that ends inside a character: the gateway writes whole events only.
    text += new TextDecoder('utf-8', { fatal: true }).decode(value)
  }
}

/**
 * A gateway in front of one fake provider of the given dialect (model `m`),
 * made per test by `one()` and closed by `close()` (call it in `afterEach`).
 */
export function oneProviderGateway() {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  return {
    get harness(): Harness {
      if (harness === undefined) throw new Error('one() was not called')
      return harness
    },
    async one(dialect: ProviderDialect, extra: Record<string, unknown> = {}) {
      const { fake, entry } = await fakeProvider(dialect, [`key-${dialect}`])
      fakes.push(fake)
      harness = await startHarness({
        providers: { p: entry },
        models: { m: fallback(['p', 'model-x']) },
        ...extra,
      })
      return fake
    },
    async close() {
      await harness?.close()
      await Promise.all(fakes.map((f) => f.close()))
      fakes = []
      harness = undefined
    },
  }
}
