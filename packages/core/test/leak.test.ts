import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const fixture = fileURLToPath(new URL('./fixtures/child-deadlines-leak.mjs', import.meta.url))
const CHILDREN = 200_000

describe('leaks (child process, --expose-gc, built package)', () => {
  // 200,000 children and 4 MB: the same bound per child as 1,000,000 and
  // 20 MB had (20 B a child), at a fifth of the CPU. With no leak the heap
  // moves 0.05–0.2 MB at either count; a `{ ms }` kept per child (40 B)
  // reads 8 MB here and fails, as it read 40 MB at 1,000,000. Listeners and
  // timers are counted exactly: one left shows at any count.
  it('200,000 child deadlines created and disposed under one parent grow the heap by < 4 MB (20 B a child) and leave no listener or timer', async () => {
    expect(
      existsSync(new URL('../dist/index.js', import.meta.url)),
      'run `npm run build` first',
    ).toBe(true)
    const { stdout } = await run(process.execPath, ['--expose-gc', fixture, String(CHILDREN)], {
      timeout: 60_000,
    })
    const result = JSON.parse(stdout) as Record<string, number | boolean>
    expect(result).toMatchObject({
      count: CHILDREN,
      aborted: 0,
      parentAbortListeners: 0,
      parentAlive: true,
    })
    expect(result.heapGrowthMB).toBeLessThan((CHILDREN * 20) / 1_000_000)
    expect(result.timersBefore).toBe(1) // the parent's own
    expect(result.timersAfter).toBe(1)
  }, 90_000)
})
