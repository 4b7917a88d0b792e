import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Request as UndiciRequest } from 'undici'
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import {
  createFetch,
  type HourglassFetch,
  isRedirectWithStreamBody,
  RedirectWithStreamBodyError,
} from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// fetch follows a 301/302/307/308 by sending the body again, and refuses to
// when the body is a stream (read once): undici fails the call with a bare
// `Error` — no message, no code — and the retry-skipped event read
// `reason: 'Error'`. createFetch now rejects with a RedirectWithStreamBodyError
// naming the status, the Location and what to do instead. No test here
// measures time.

let server: Server
let base: string
let fetch: HourglassFetch
let events: EgressEvents | undefined

beforeAll(async () => {
  // Reads the whole request body, then: /r<status> redirects to /final
  // (its query kept, to show it stays out of the message); /final echoes
  // the method and body it got.
  server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => {
      body += chunk
    })
    req.on('end', () => {
      const redirect = /^\/r(\d{3})$/.exec(req.url ?? '')
      if (redirect) {
        res.writeHead(Number(redirect[1]), { location: '/final?sig=secret' })
        res.end('moved')
        return
      }
      res.end(`${req.method} ${body}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  fetch = createFetch()
})
afterEach(() => {
  events?.stop()
  events = undefined
})
afterAll(async () => {
  await fetch.close()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

function stream(text: string): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text))
      controller.close()
    },
  })
}

for (const status of [307, 301] as const) {
  it(`a ${status} to a stream-bodied POST rejects with REDIRECT_WITH_STREAM_BODY, naming the fix`, async () => {
    events = recordEgress()
    const error = await rejection(
      fetch(`${base}/r${status}`, { method: 'POST', body: stream('abc'), duplex: 'half' }),
    )

    expect(error).toBeInstanceOf(RedirectWithStreamBodyError)
    expect(isRedirectWithStreamBody(error)).toBe(true)
    const refused = error as RedirectWithStreamBodyError
    expect(refused.code).toBe('REDIRECT_WITH_STREAM_BODY')
    expect(refused.status).toBe(status)
    expect(refused.location).toBe(`${base}/final?sig=secret`)
    expect(refused.message).toContain(`${base}/r${status} answered ${status}`)
    expect(refused.message).toContain(`a redirect to ${base}/final,`)
    expect(refused.message).not.toContain('secret')
    expect(refused.message).toContain('string, Buffer, Blob, FormData or URLSearchParams')
    expect(refused.message).toContain("redirect: 'manual'")
    // undici's bare error stays reachable.
    expect(refused.cause).toBeInstanceOf(Error)

    // Not retried, and said so by the code (it read `reason: 'Error'`).
    expect(events.retries).toEqual([])
    expect(events.skipped.map(({ reason, why }) => ({ reason, why }))).toEqual([
      { reason: 'REDIRECT_WITH_STREAM_BODY', why: 'body-not-replayable' },
    ])
  })
}

it('a Request built on a stream, and an async iterable body, get the same error', async () => {
  const request = new UndiciRequest(`${base}/r308`, {
    method: 'PUT',
    body: stream('abc'),
    duplex: 'half',
  })
  const fromRequest = await rejection(fetch(request))
  expect(isRedirectWithStreamBody(fromRequest)).toBe(true)
  expect((fromRequest as RedirectWithStreamBodyError).status).toBe(308)

  async function* chunks(): AsyncGenerator<Uint8Array> {
    yield new TextEncoder().encode('abc')
  }
  const fromIterable = await rejection(
    fetch(`${base}/r302`, { method: 'POST', body: chunks(), duplex: 'half' }),
  )
  expect(isRedirectWithStreamBody(fromIterable)).toBe(true)
  expect((fromIterable as RedirectWithStreamBodyError).status).toBe(302)
})

// Controls: what fetch can follow, it still follows.
it('the same redirects with a string body are followed (307 keeps POST and body, 301 goes on as GET)', async () => {
  const kept = await fetch(`${base}/r307`, { method: 'POST', body: 'abc' })
  expect(kept.status).toBe(200)
  expect(await kept.text()).toBe('POST abc')
  const turned = await fetch(`${base}/r301`, { method: 'POST', body: 'abc' })
  expect(turned.status).toBe(200)
  expect(await turned.text()).toBe('GET ')
})

it("a stream body is followed through a 303 (sent on as a GET) and left to the caller under redirect: 'manual'", async () => {
  const seeOther = await fetch(`${base}/r303`, {
    method: 'POST',
    body: stream('abc'),
    duplex: 'half',
  })
  expect(await seeOther.text()).toBe('GET ')
  const manual = await fetch(`${base}/r307`, {
    method: 'POST',
    body: stream('abc'),
    duplex: 'half',
    redirect: 'manual',
  })
  expect(manual.status).toBe(307)
  expect(manual.headers.get('location')).toBe('/final?sig=secret')
  await manual.body?.cancel()
})
