import { connect, type Socket } from 'node:net'
import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { fallback, type Harness, startHarness } from '../support/harness.js'

const BODY = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
const POST =
  'POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\ncontent-type: application/json\r\n' +
  `content-length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`

let fake: FakeProvider | undefined
let harness: Harness | undefined
const sockets: Socket[] = []
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  await harness?.close()
  await fake?.close()
  fake = undefined
  harness = undefined
})

/**
 * The README (Shutdown): `close()` "stops accepting connections once what has
 * already reached the process is read — … a connection waiting to be
 * accepted (a stop signal under load comes while the process is busy):
 * these get the drain's 503, not a reset". libuv accepts one waiting
 * connection per turn of the event loop: with ten waiting, two were
 * accepted and answered, eight reset with nothing written or logged.
 */
it("ten connections waiting to be accepted when close() comes: each gets the drain's 503, none a reset", async () => {
  fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('hi') })
  harness = await startHarness({
    providers: { p: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['k'] } },
    models: { m: fallback(['p', 'gpt']) },
  })
  const running = harness.running
  const port = Number(new URL(harness.url).port)
  const N = 10
  let connected = 0
  let closing: ReturnType<typeof running.close> | undefined
  const answers = Array.from(
    { length: N },
    () =>
      new Promise<string>((resolve) => {
        let text = ''
        const socket = connect(port, '127.0.0.1', () => {
          // All connected (the kernel took them; the gateway has accepted
          // one or two): every request written, close() in this same turn.
          if (++connected < N) return
          for (const s of sockets) s.write(POST)
          closing = running.close()
        })
        sockets.push(socket)
        socket.on('data', (chunk) => {
          text += chunk
        })
        socket.on('error', (e: NodeJS.ErrnoException) => {
          text += `<${e.code}>`
        })
        socket.on('close', () => resolve(text.split('\r\n')[0] || text))
      }),
  )
  expect(await Promise.all(answers)).toEqual(Array(N).fill('HTTP/1.1 503 Service Unavailable'))
  expect(await closing).toMatchObject({ inFlight: 0, cutOff: 0 })
  const lines = harness.logs.filter((l) => l.event === 'request')
  expect(lines).toHaveLength(N)
  expect(lines.every((l) => l['status'] === 503 && l['error'] === 'shutting_down')).toBe(true)
  expect(fake.requests).toHaveLength(0)
})
