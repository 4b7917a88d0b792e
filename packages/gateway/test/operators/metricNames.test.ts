import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

/**
 * The page read by the exposition format's naming rules, as a scraper and a
 * dashboard author meet them: counters end in `_total`, a family measured
 * in seconds says so in its name (`_seconds`: Prometheus keeps no unit
 * metadata from a text/plain page, so the name is the only place a
 * `histogram_quantile(…)` reader learns it), every sample belongs to a
 * family with HELP and TYPE.
 */
describe('/metrics names', () => {
  let harness: Harness | undefined
  let closeFake: (() => Promise<void>) | undefined
  afterEach(async () => {
    await harness?.close()
    await closeFake?.()
    harness = undefined
  })

  it('counters end in _total, durations in _seconds, every sample under a HELP and a TYPE', async () => {
    const { fake, entry } = await fakeProvider('openai', ['sk-metric-names-0001'])
    closeFake = () => fake.close()
    harness = await startHarness({ providers: { p: entry }, models: { m: fallback(['p', 'x']) } })
    fake.enqueue(reply.text('one two'))
    const stream = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    })
    for await (const _ of stream) {
      // read it to the end
    }
    const page = await (await fetch(`${harness.url}/metrics`)).text()

    const types = new Map<string, string>()
    const helps = new Set<string>()
    const units = new Map<string, string>()
    for (const line of page.split('\n')) {
      const meta = /^# (HELP|TYPE|UNIT) (\S+) (.*)$/.exec(line)
      if (meta?.[1] === 'TYPE') types.set(meta[2]!, meta[3]!)
      if (meta?.[1] === 'HELP') helps.add(meta[2]!)
      if (meta?.[1] === 'UNIT') units.set(meta[2]!, meta[3]!)
    }
    expect([...types.values()]).toContain('histogram')
    const problems: string[] = []
    for (const [name, type] of types) {
      if (!helps.has(name)) problems.push(`${name}: no HELP`)
      if (type === 'counter' && !name.endsWith('_total'))
        problems.push(`${name}: counter without _total`)
      const unit = units.get(name)
      if ((unit === 's' || unit === 'seconds') && !name.endsWith('_seconds'))
        problems.push(`${name}: in seconds, not named _seconds`)
    }
    for (const line of page.split('\n')) {
      if (line === '' || line.startsWith('#')) continue
      const name = /^[a-zA-Z_:][\w:]*/.exec(line)?.[0] ?? line
      const family = [...types.keys()].find(
        (f) => name === f || /^_(bucket|sum|count)$/.test(name.slice(f.length)),
      )
      if (family === undefined) problems.push(`${line}: no family`)
    }
    expect(problems).toEqual([])
  })

  // As /healthz and /readyz: a proxy or CDN between the scraper and the
  // gateway must not hand it an old page (a counter that seems to stand still).
  it('is never cached', async () => {
    const { fake, entry } = await fakeProvider('openai', ['sk-metric-names-0002'])
    closeFake = () => fake.close()
    harness = await startHarness({ providers: { p: entry }, models: { m: fallback(['p', 'x']) } })
    const res = await fetch(`${harness.url}/metrics`)
    await res.text()
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
  })
})
