import { once } from 'node:events'
import { type AddressInfo, createServer, type Socket } from 'node:net'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// A call still running at 3 × --budget ends the probe, and "A call that
// fails ends the probe (exit 1) with one line naming the phase" (README) —
// but that line read the same whether the call never connected (a firewall
// dropping SYNs, a TLS port that never answers the handshake), connected
// and got no headers, or stalled in the body: the bound replaced fetch's
// phase limits, whose errors named the phase, and said none itself.

let server: FaultServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const probe = (url: string) =>
  runMain(['probe', url, '--warmup', '0', '--samples', '1', '--budget', '200'])

const line = (phase: string) =>
  new RegExp(
    `^hourglass probe: 127\\.0\\.0\\.1:\\d+ did not finish measured call 1 of 1 within 600 ms \\(3 × the 200 ms --budget\\): ${phase}; the probe stops waiting there$`,
    'm',
  )

it('connected, no response headers: says so', async () => {
  server = await faultServer({ type: 'hang' })
  const run = await probe(server.url)
  expect(run.code, run.stderr).toBe(1)
  expect(run.stderr).toMatch(line('connected, it had sent no response headers'))
})

it('headers, then a body that never comes: says so', async () => {
  server = await faultServer({ type: 'headers-then-stall' })
  const run = await probe(server.url)
  expect(run.code, run.stderr).toBe(1)
  expect(run.stderr).toMatch(line('it was still sending the body'))
})

it('a TLS handshake never answered: still connecting', async () => {
  // Accepts TCP and never says a word: the client's ClientHello goes unanswered.
  const sockets = new Set<Socket>()
  const tcp = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
  })
  tcp.listen(0, '127.0.0.1')
  await once(tcp, 'listening')
  try {
    const run = await probe(`https://127.0.0.1:${(tcp.address() as AddressInfo).port}/`)
    expect(run.code, run.stderr).toBe(1)
    expect(run.stderr).toMatch(line('it was still connecting \\(TCP or TLS\\)'))
  } finally {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => tcp.close(resolve))
  }
})
