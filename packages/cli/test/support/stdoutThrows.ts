import { expect } from 'vitest'
import { main } from '../../src/index.js'

/**
 * Runs `main(argv, io)` with an io.stdout that throws (a caller writing to a
 * stream it has closed: EPIPE), and checks the command failed with exit 1,
 * said why on io.stderr (`hourglass <command>: write EPIPE`), and left
 * nothing running: no TCP server beyond those open before, no SIGINT,
 * SIGTERM or SIGHUP listener added to the process.
 */
export async function expectNothingLeftWhenStdoutThrows(argv: string[]): Promise<void> {
  const servers = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap')
  const signalListeners = () =>
    (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((signal) => process.listenerCount(signal))
  const before = { servers: servers().length, signals: signalListeners() }
  let stderr = ''
  const code = await main(argv, {
    stdout: () => {
      throw Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })
    },
    stderr: (text) => {
      stderr += text
    },
    stderrIsTTY: false,
  })
  expect(code).toBe(1)
  expect(stderr).toContain(`hourglass ${argv[0]}: write EPIPE\n`)
  // A closed server's handle is released in the loop's close phase, after
  // its close callback: polled, not read at once.
  await expect.poll(() => servers().length).toBe(before.servers)
  expect(signalListeners()).toEqual(before.signals)
}
