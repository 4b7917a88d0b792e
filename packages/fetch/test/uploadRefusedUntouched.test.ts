import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'
import { rejection } from './helpers.js'

let server: Server
let url: string
let fetch: HourglassFetch
beforeAll(async () => {
  server = createServer((req, res) => {
    let bytes = 0
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length
    })
    req.on('end', () => res.end(String(bytes)))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  fetch = createFetch()
})
afterAll(async () => {
  await fetch.close()
  server.closeAllConnections()
  server.close()
  await once(server, 'close')
})

/**
 * A request undici's fetch refuses as it builds it (a stream body without
 * `duplex: 'half'`, a GET with a body) is never sent, and undici leaves
 * the body as it was given: the caller fixes the call and sends the same
 * stream. createFetch cancelled it as if a request had failed on its way:
 * the fixed call then failed with "Response body object should not be
 * disturbed or locked", and a generator was ended.
 */
it('a stream body of a call undici refuses as it builds it (no duplex) is left as given, and can be sent', async () => {
  let cancelled = false
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new Uint8Array(5))
      controller.close()
    },
    cancel() {
      cancelled = true
    },
  })
  const error = await rejection(fetch(url, { method: 'POST', body }))
  expect(error).toMatchObject({ name: 'TypeError', message: expect.stringContaining('duplex') })
  expect(cancelled).toBe(false)
  const answer = await fetch(url, { method: 'POST', body, duplex: 'half' })
  expect(await answer.text()).toBe('5')
})

it('so is an async generator: not ended, it goes out with the fixed call', async () => {
  let ended = false
  async function* chunks() {
    try {
      yield new Uint8Array(3)
    } finally {
      ended = true
    }
  }
  const body = chunks()
  const error = await rejection(fetch(url, { method: 'GET', body, duplex: 'half' }))
  expect(error).toMatchObject({ name: 'TypeError' })
  expect(ended).toBe(false)
  const answer = await fetch(url, { method: 'POST', body, duplex: 'half' })
  expect(await answer.text()).toBe('3')
  expect(ended).toBe(true)
})

it('and so is one sent to a URL fetch refuses (a blocked port): nothing was read from it', async () => {
  let cancelled = false
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new Uint8Array(4))
      controller.close()
    },
    cancel() {
      cancelled = true
    },
  })
  const error = await rejection(
    fetch('http://127.0.0.1:1/', { method: 'POST', body, duplex: 'half' }),
  )
  expect(error).toMatchObject({ code: 'URL_REFUSED' })
  expect(cancelled).toBe(false)
  const answer = await fetch(url, { method: 'POST', body, duplex: 'half' })
  expect(await answer.text()).toBe('4')
})
