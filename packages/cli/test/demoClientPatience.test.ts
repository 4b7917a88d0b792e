import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { sendCase } from '../src/demo/sendTraffic.js'

// runDemo() takes each of `budgetsMs` and `graceMs` up to 2^31 − 1 ms, and
// its client gives up at their sum — a timer Node cannot hold past 2^31 − 1:
// it fired after 1 ms (with a TimeoutOverflowWarning), and every request of a
// run with long budgets was "given up" at once, answered or not.

let server: Server | undefined
let agent: Agent | undefined

afterEach(async () => {
  await agent?.close()
  agent = undefined
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

it('a budget plus grace past 2^31 − 1 ms: the client waits for its answer', async () => {
  const warnings: string[] = []
  const onWarning = (warning: Error) => warnings.push(warning.name)
  process.on('warning', onWarning)
  // A slow upstream: the answer comes a moment after the request, long
  // after the overflowed timer (1 ms) had given up on it.
  server = createServer((_req, res) => {
    setTimeout(() => res.end('{}'), 30)
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  agent = new Agent()
  try {
    const result = await sendCase(
      `http://127.0.0.1:${port}/`,
      { id: 'r01', atMs: 0, budgetMs: 2_000_000_000 },
      2_000_000_000,
      agent,
    )
    expect(result).toMatchObject({ gaveUp: false, status: 200 })
    expect(warnings).not.toContain('TimeoutOverflowWarning')
  } finally {
    process.off('warning', onWarning)
  }
})
