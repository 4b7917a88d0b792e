import { readdirSync } from 'node:fs'
import { HourglassError } from '@hourglass/core'
import { expect, it } from 'vitest'

// Base classes whose constructor takes the code: each subclass carries its own.
const BASES = new Set(['fetch/EgressError'])
interface Found {
  where: string
  cls: abstract new (...args: never) => unknown
  code: unknown
}

const packagesDir = new URL('../../packages/', import.meta.url)

/**
 * Every error class in every package's source (llm exports its errors as
 * types only, so the modules are read, not the packages' index), with its
 * static `code`. A module per file named after its export.
 */
async function errorClasses(): Promise<Found[]> {
  const found: Found[] = []
  for (const pkg of readdirSync(packagesDir)) {
    const src = new URL(`${pkg}/src/`, packagesDir)
    for (const file of readdirSync(src, { recursive: true, encoding: 'utf8' })) {
      if (!/Error\.ts$/.test(file)) continue
      const mod = (await import(new URL(file, src).href)) as Record<string, unknown>
      for (const [name, value] of Object.entries(mod)) {
        if (typeof value !== 'function' || !(value.prototype instanceof HourglassError)) continue
        found.push({
          where: `${pkg}/${name}`,
          cls: value as Found['cls'],
          code: (value as { code?: unknown }).code,
        })
      }
    }
  }
  return found
}

it('one error vocabulary: every error class has a static code, SCREAMING_SNAKE_CASE without a prefix, shared by no unrelated class', async () => {
  const classes = await errorClasses()
  // Core's, fetch's, llm's, gateway's, bullmq's: the test sees what it claims to check.
  expect(classes.length).toBeGreaterThanOrEqual(25)
  const bad = classes.filter(
    (c) =>
      !BASES.has(c.where) &&
      (typeof c.code !== 'string' ||
        !/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/.test(c.code) ||
        c.code.startsWith('HOURGLASS_')),
  )
  expect(bad).toEqual([])
  // A code names one kind of failure: only a subclass may share its parent's.
  const clashes = classes.flatMap((a) =>
    classes
      .filter((b) => a.where < b.where && a.code === b.code)
      .filter((b) => !(a.cls.prototype instanceof b.cls || b.cls.prototype instanceof a.cls))
      .map((b) => `${a.where} and ${b.where}: ${String(a.code)}`),
  )
  expect(clashes).toEqual([])
})
