import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const fixture = fileURLToPath(new URL('./fixtures/child-deadlines-leak.mjs', import.meta.url))

describe('leaks (child process, --expose-gc, built package)', () => {
  it('1,000,000 child deadlines created and disposed under one parent grow the heap by < 20 MB and leave no listener or timer', async () => {
    expect(
      existsSync(new URL('../dist/index.js', import.meta.url)),
      'run `npm run build` first',
    ).toBe(true)
    const { stdout } = await run(process.execPath, ['--expose-gc', fixture, '1000000'], {
      timeout: 60_000,
    })
    const result = JSON.parse(stdout) as Record<string, number | boolean>
    expect(result).toMatchObject({
      count: 1_000_000,
      aborted: 0,
      parentAbortListeners: 0,
      parentAlive: true,
    })
    expect(result.heapGrowthMB).toBeLessThan(20)
    expect(result.timersBefore).toBe(1) // the parent's own
    expect(result.timersAfter).toBe(1)
  }, 90_000)
})
