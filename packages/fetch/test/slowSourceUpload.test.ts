import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { afterEach, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { rejection } from './helpers.js'

// The headers limit bounds the server's silence. A stream upload whose own
// source pauses (a proxied client's upload that arrives slowly, a generator
// awaiting its next row) leaves undici waiting on the caller, not on the
// server, which cannot answer a body that has not come: such a pause longer
// than `headersTimeoutMs` failed the call as HEADERS_TIMEOUT (and, a stream
// body, never retried). Once the upload has ended, the limit counts the
// server's silence as before. No test here measures time: a ManualClock
// moves while the source waits.

let server: Server | undefined
afterEach(async () => {
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** Answers `got <bytes>` once the upload has ended, or never (`silent`). */
async function upstream(
  silent: boolean,
): Promise<{ url: string; received: () => number; ended: Promise<void> }> {
  let received = 0
  let end = () => {}
  const ended = new Promise<void>((resolve) => (end = resolve))
  server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (received += chunk.length))
    req.on('end', () => {
      end()
      if (!silent) res.end(`got ${received}`)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    received: () => received,
    ended,
  }
}

/** A source that sends `a`, then waits for `release()` before `b`; `asked` resolves once undici wants the chunk after `a`. */
function pausingSource() {
  let release = () => {}
  const gate = new Promise<void>((resolve) => (release = resolve))
  let ask = () => {}
  const asked = new Promise<void>((resolve) => (ask = resolve))
  async function* source() {
    yield 'a'
    ask()
    await gate
    yield 'b'
  }
  return { body: source(), asked, release }
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((resolve) => setImmediate(resolve))
}

it.each([
  ['an async generator', (body: AsyncGenerator<string>) => body],
  [
    'a ReadableStream',
    (body: AsyncGenerator<string>) => ReadableStream.from(body) as ReadableStream<string>,
  ],
])(
  'an upload from %s that waits on its source past headersTimeoutMs is answered',
  async (_kind, wrap) => {
    const up = await upstream(false)
    const clock = new ManualClock()
    const fetch = createFetch({ headersTimeoutMs: 200, clock })
    const source = pausingSource()
    const call = fetch(up.url, { method: 'POST', body: wrap(source.body), duplex: 'half' } as never)
    await source.asked
    await until(() => up.received() === 1)
    // Five limits of the server waiting for the rest of a body the caller has not given yet.
    for (let i = 0; i < 5; i++) clock.advance(200)
    source.release()
    const res = await call
    expect(await res.text()).toBe('got 2')
    await fetch.close()
  },
)

it('once the upload has ended, a silent server still fails HEADERS_TIMEOUT', async () => {
  const up = await upstream(true)
  const clock = new ManualClock()
  const fetch = createFetch({ headersTimeoutMs: 200, clock })
  const source = pausingSource()
  const call = rejection(
    fetch(up.url, { method: 'POST', body: source.body, duplex: 'half' } as never),
  )
  await source.asked
  clock.advance(1000)
  source.release()
  await Promise.race([up.ended, call])
  clock.advance(200)
  clock.advance(200)
  expect(await call).toMatchObject({ code: 'HEADERS_TIMEOUT' })
  await fetch.close()
})
