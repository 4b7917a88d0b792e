import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { watchLoopStalls } from './loopStalls.js'

// The control timing tests add to their bounds: it must count time the
// process was kept from running, and not time our own code held the loop.
describe('watchLoopStalls', () => {
  it('counts a process stopped for 300 ms (SIGSTOP, as a loaded box deschedules it)', async () => {
    const stalls = watchLoopStalls()
    const shell = spawn(
      'sh',
      ['-c', `sleep 0.05; kill -STOP ${process.pid}; sleep 0.3; kill -CONT ${process.pid}`],
      { stdio: 'ignore' },
    )
    await once(shell, 'exit')
    // Broken (CPU time taken as stall, or the gaps not measured): ~0.
    expect(stalls.stop()).toBeGreaterThan(200)
  })

  it('does not count 300 ms of CPU our own code spent holding the loop', () => {
    const cpuMs = () => {
      const { user, system } = process.cpuUsage()
      return (user + system) / 1000
    }
    const stalls = watchLoopStalls()
    const from = performance.now()
    const end = cpuMs() + 300
    while (cpuMs() < end) {
      // busy: 300 ms of this process's own CPU time (longer on a loaded box)
    }
    const wallMs = performance.now() - from
    // What is left is the time a loaded box took the CPU away; broken (wall
    // time alone), it would read the whole `wallMs`.
    expect(stalls.stop()).toBeLessThan(wallMs - 250)
  })
})
