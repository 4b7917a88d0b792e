import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { assertBuilt, cliBin, runNode } from './cli/runNode.js'

// Every example runs with one command against the built packages; these
// tests run them exactly so, and check what they print, so they cannot rot.
// The ones whose output carries a time are in examples.timing.test.ts.
const example = (name: string) =>
  fileURLToPath(new URL(`../examples/${name}/index.mjs`, import.meta.url))

describe('examples/', () => {
  it('gateway-openai: the official openai client, unchanged but for baseURL, gets answers through the gateway while the primary is limited', async () => {
    assertBuilt(cliBin)
    const run = await runNode([example('gateway-openai')], { killAfterMs: 20_000 })
    expect(run.code, run.stderr).toBe(0)
    const [plain, streamed, counts] = run.stdout.trimEnd().split('\n')
    expect(plain).toBe('non-streaming: Hello from the backup model — 你好 👋 (model chat)')
    expect(streamed).toBe('streaming:     Hello from the backup model — 你好 👋')
    // One 429 from the primary; its key then cools down, so the second request skips it.
    expect(counts).toBe('primary: 1 call(s), outcomes error; backup: 2 answer(s)')
  })

  for (const name of ['bullmq-queue', 'one-trace']) {
    it(`${name}: without redis-server on PATH, one line saying what to install (exit 1), not a stack trace`, async () => {
      assertBuilt(fileURLToPath(new URL('../packages/bullmq/dist/index.js', import.meta.url)))
      // node is started by its absolute path; a PATH with nothing on it hides redis-server.
      const run = await runNode([example(name)], {
        killAfterMs: 20_000,
        env: { PATH: fileURLToPath(new URL('../examples/no-such-dir', import.meta.url)) },
      })
      expect(run.stdout).toBe('')
      expect(run.stderr).toBe(
        `examples/${name} needs redis-server on PATH (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)\n`,
      )
      expect(run.code).toBe(1)
    })
  }
})
