import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { TestSpecification, Vitest } from 'vitest/node'
import { ISOLATED, OTEL, TIMING, TIMING_FRESH } from '../../vitest.config.js'
import { LONGEST, LongestFirstSequencer } from './LongestFirstSequencer.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

function spec(project: string, groupOrder: number, file: string): TestSpecification {
  return {
    project: { name: project, config: { sequence: { groupOrder } } },
    moduleId: join(root, file),
  } as unknown as TestSpecification
}

/** A Vitest without cached timings or file sizes, as on a fresh clone. */
const freshClone = {
  config: { root },
  cache: { getFileTestResults: () => undefined, getFileStats: () => undefined },
} as unknown as Vitest

const names = (specs: TestSpecification[]) =>
  specs.map((s) => `${s.project.name}:${s.moduleId.slice(root.length)}`)

describe('LongestFirstSequencer', () => {
  it('names files that exist, none of them a timing file (those run one at a time anyway)', () => {
    for (const file of LONGEST) expect(existsSync(join(root, file)), file).toBe(true)
    const serial = new Set([...TIMING, ...TIMING_FRESH].filter((f) => !f.includes('*')))
    expect(LONGEST.filter((f) => serial.has(f) || f.endsWith('.timing.test.ts'))).toEqual([])
    expect(new Set(LONGEST).size).toBe(LONGEST.length)
    // The isolated and otel ones are listed where they run.
    const isolated = LONGEST.filter((f) => ISOLATED.includes(f))
    expect(isolated.every((f) => !OTEL.includes(f))).toBe(true)
  })

  it('moves the listed files to the front of their project, longest first, and keeps groups and projects contiguous', async () => {
    const [leakExpress, leakFetch] = LONGEST as [string, string]
    const fuzz = 'test/fuzz/normalizers.fuzz.test.ts'
    const files = [
      spec('parallel', 0, 'packages/core/test/a.test.ts'),
      spec('timing', 1, 'test/chaos/chain.chaos.test.ts'),
      spec('parallel', 0, fuzz),
      spec('isolated', 0, 'packages/otel/test/laterPackages.test.ts'),
      spec('otel', 0, 'packages/otel/test/names.test.ts'),
      spec('isolated', 0, leakFetch),
      spec('parallel', 0, 'packages/core/test/b.test.ts'),
      spec('isolated', 0, leakExpress),
    ]
    const sorted = await new LongestFirstSequencer(freshClone).sort(files)
    expect(names(sorted)).toEqual([
      `isolated:${leakExpress}`,
      `isolated:${leakFetch}`,
      'isolated:packages/otel/test/laterPackages.test.ts',
      'otel:packages/otel/test/names.test.ts',
      `parallel:${fuzz}`,
      'parallel:packages/core/test/a.test.ts',
      'parallel:packages/core/test/b.test.ts',
      'timing:test/chaos/chain.chaos.test.ts',
    ])
  })
})
