import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { outcomeWithin } from '@hourglass/core'
import { afterAll, beforeAll, expect, it } from 'vitest'

/**
 * A store that answered in a millisecond, read by a process whose loop was
 * busy past the bound (a CPU-bound handler, a loaded machine): when the loop
 * comes back, Node runs the due timers before it reads the sockets, so the
 * bound's timer fired first and the answer sitting in the socket was taken
 * for silence (a Redis "down" that was not, and limits shared through it
 * fell back to each process's own share). The answer is taken now.
 */
let echo: ChildProcess
let client: Socket

beforeAll(async () => {
  // In a process of its own, as a Redis is: it answers while this one is blocked.
  echo = spawn(
    process.execPath,
    [
      '-e',
      "const s = require('node:net').createServer((c) => c.pipe(c)).listen(0, '127.0.0.1', () => console.log(s.address().port))",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const [line] = (await once(echo.stdout!, 'data')) as [Buffer]
  client = connect(Number(String(line).trim()), '127.0.0.1')
  await once(client, 'connect')
})

afterAll(async () => {
  client.destroy()
  echo.kill()
  await once(echo, 'exit')
})

/** Blocks the loop for `ms` of real time, as a CPU-bound handler does. */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

it('an answer that arrived while the loop was blocked past the bound is its outcome, not a timeout', async () => {
  const answered = once(client, 'data').then(([data]) => String(data))
  client.write('pong\n')
  const settled = outcomeWithin(answered, 50)
  // The echo arrives within a millisecond; the loop reads it only after this.
  block(300)
  await expect(settled).resolves.toEqual({ ok: true, value: 'pong\n' })
})

it('silence is still a timeout', async () => {
  const never = new Promise<string>(() => {})
  const settled = outcomeWithin(never, 20)
  block(100)
  await expect(settled).resolves.toBeUndefined()
})
