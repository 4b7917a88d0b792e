import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { assertBuilt, hourglassBin, repoRoot } from './runNode.js'

describe('hourglass demo --serve stopped as soon as it says it is up', () => {
  it('a SIGTERM sent at the first byte of its banner stops it cleanly: exit 0, not killed by the signal', async () => {
    assertBuilt()
    const child = spawn(process.execPath, [hourglassBin, 'demo', '--serve'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    // What a supervisor does once the service reports ready. The handler used
    // to be set after the banner was written: 8 of 8 such starts ended by the
    // signal (exit null).
    child.stdout.once('data', () => child.kill('SIGTERM'))
    child.stdout.resume()
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
    try {
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
        child.once('exit', (c, s) => resolve([c, s])),
      )
      expect({ code, signal }, stderr).toEqual({ code: 0, signal: null })
    } finally {
      clearTimeout(guard)
    }
  })
})
