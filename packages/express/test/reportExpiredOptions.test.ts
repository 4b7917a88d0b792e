import { ManualClock } from '@hourglass/core'
import express from 'express'
import { request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { deadline, type IngressExpireMessage, reportExpired } from '../src/index.js'
import { client, listen, type Running } from './support/servers.js'

/**
 * `reportExpired(req, 'model')` — the slice's name where its options go —
 * was taken without a word: `'model'.slice` is String.prototype.slice, and
 * the request's expiry was reported "in slice "function slice() { [native
 * code] }"", the `expire` event's `slice` a function. A slice that is no
 * string (`{ slice: 42 }`) was reported as "42". Both are refused, as every
 * option is, and so is an option it does not take.
 */
let server: Running | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

it('refuses options that are no object, a slice that is no string and an unknown option', () => {
  const req = {}
  expect(() => reportExpired(req, 'model' as never)).toThrow(
    /reportExpired\(\): options must be an object, got 'model'/,
  )
  expect(() => reportExpired(req, { slice: 42 as never })).toThrow(
    /reportExpired: slice must be a string, got 42/,
  )
  expect(() => reportExpired(req, { slice: null as never })).toThrow(TypeError)
  expect(() => reportExpired(req, { name: 'model' } as never)).toThrow(/unknown option "name"/)
  // What it takes: nothing, or a slice's name (undefined: the slice running).
  expect(reportExpired(req)).toBe(false)
  expect(reportExpired(req, {})).toBe(false)
  expect(reportExpired(req, { slice: undefined })).toBe(false)
  expect(reportExpired(req, { slice: 'model' })).toBe(false)
})

it('reports nothing for a request it refused the options of', async () => {
  const expired: IngressExpireMessage[] = []
  const refused: unknown[] = []
  const app = express()
  app.use(deadline({ clock: new ManualClock(), onExpire: (m) => expired.push(m) }))
  app.get('/', (req, res) => {
    res.status(504).end()
    try {
      reportExpired(req, 'model' as never)
    } catch (error) {
      refused.push(error)
    }
  })
  server = await listen(app)
  const res = await request(server.url, { dispatcher: client() })
  await res.body.dump()
  expect(res.statusCode).toBe(504)
  expect(refused).toHaveLength(1)
  expect(expired).toEqual([])
})
