import { HourglassError } from '@hourglass/core'
import { expect, it } from 'vitest'

// Every error class a package exports declares its name (`static errorName`),
// which HourglassError writes as `name`: a bundler that minifies class names
// renamed them (`e: deadline exceeded …` in every log line, stack and span).
// One left without it is named whatever the minifier calls it; this test
// names it. (core/test/errorNamesSurviveMinify.test.ts shows the rename.)
const packages = [
  'core',
  'fetch',
  'llm',
  'gateway',
  'bullmq',
  'express',
  'grpc',
  'otel',
  'testkit',
  'cli',
]

it('every exported Hourglass error class declares its own errorName, equal to its class name', async () => {
  const checked: string[] = []
  const missing: string[] = []
  for (const name of packages) {
    const exported: Record<string, unknown> = await import(`@hourglass/${name}`)
    for (const [key, value] of Object.entries(exported)) {
      if (
        typeof value !== 'function' ||
        !(value === HourglassError || value.prototype instanceof HourglassError)
      ) {
        continue
      }
      checked.push(`${name}.${key}`)
      const declared = Object.hasOwn(value, 'errorName')
        ? (value as { errorName?: unknown }).errorName
        : undefined
      if (declared !== key) missing.push(`${name}.${key} (errorName ${String(declared)})`)
    }
  }
  expect(missing).toEqual([])
  // The classes are found at all (a refactor that moved them would pass above with none).
  expect(checked.length).toBeGreaterThan(20)
})
