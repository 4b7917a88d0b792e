import { describe, expect, it } from 'vitest'
import { configProblems as problems } from './support/configProblems.js'

const providersNamed = (count: number) =>
  Object.fromEntries(
    Array.from({ length: count }, (_, i) => [
      `p${i}`,
      { dialect: 'openai', baseURL: 'https://a.example.com/v1' },
    ]),
  )

const modelsNaming = (provider: string, count: number) =>
  Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`m${i}`, { fallback: [{ provider, model: 'm' }] }]),
  )

describe('an unknown provider in a config with many providers', () => {
  it('names the first 20 known providers and how many more, not all of them', () => {
    expect(
      problems({ providers: providersNamed(300), models: modelsNaming('renamed', 1) }),
    ).toEqual([
      `models.m0.fallback[0].provider: unknown provider "renamed" (known: ${Array.from(
        { length: 20 },
        (_, i) => `p${i}`,
      ).join(', ')}, and 280 more)`,
    ])
  })

  it('keeps the report bounded when many fallbacks name it (a provider renamed)', () => {
    // Was 1.76 MB for these 1,000 lines (each naming all 300 providers); from a
    // file under 1 MiB (3,000 providers, 10,000 fallbacks) a RangeError after 16 s.
    const lines = problems({
      providers: providersNamed(300),
      models: modelsNaming('renamed', 1000),
    })
    expect(lines).toHaveLength(1000)
    expect(lines.join('\n').length).toBeLessThan(250_000)
  })

  it('still lists every known provider when there are 20 or fewer', () => {
    expect(problems({ providers: providersNamed(3), models: modelsNaming('qwne', 1) })).toEqual([
      'models.m0.fallback[0].provider: unknown provider "qwne" (known: p0, p1, p2)',
    ])
  })
})
