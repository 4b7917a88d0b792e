import { once } from 'node:events'
import { createServer, type ServerOptions, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { afterEach, describe, expect, it, onTestFinished } from 'vitest'
import { deadline } from '../src/index.js'
import { client, majors } from './support/servers.js'

// Node's `rejectNonStandardBodyWrites` server option (20.13+) makes a body
// written to a response that may not have one (a HEAD's) throw
// ERR_HTTP_BODY_NOT_ALLOWED instead of being dropped. The 504 wrote its JSON
// body to HEAD requests too: from the deadline's timer, an uncaught
// exception that took the process down, and the caller got no answer. A
// `respond` of the app's that writes its body (as the gateway's does) did
// the same: its body is dropped for a HEAD as Node drops it by default.

describe.each(majors)('HEAD on a server with rejectNonStandardBodyWrites ($name)', (major) => {
  let close: (() => Promise<void>) | undefined
  afterEach(async () => {
    await close?.()
    close = undefined
  })

  it.each([
    {
      when: 'at the deadline',
      headers: { 'x-deadline-remaining-ms': '60' },
      strict: false,
      status: 504,
    },
    { when: 'on arrival', headers: { 'x-deadline-remaining-ms': '0' }, strict: false, status: 504 },
    {
      when: 'refused by strict',
      headers: { 'x-deadline-remaining-ms': 'soon' },
      strict: true,
      status: 400,
    },
    {
      // The gateway's own `respond` writes this way (res.end(text)).
      when: 'by respond, with res.end(body)',
      headers: { 'x-deadline-remaining-ms': '60' },
      strict: false,
      status: 504,
      respond: (_req: unknown, res: ServerResponse) => {
        const text = JSON.stringify({ error: { code: 'deadline_exceeded' } })
        res.statusCode = 504
        res.setHeader('content-type', 'application/json')
        res.setHeader('content-length', Buffer.byteLength(text))
        res.end(text)
      },
    },
    {
      when: 'by respond, with res.write() then res.end()',
      headers: { 'x-deadline-remaining-ms': '0' },
      strict: false,
      status: 504,
      respond: (_req: unknown, res: ServerResponse) => {
        res.statusCode = 504
        res.setHeader('content-length', 4)
        res.write('ab', () => {})
        res.end('cd', 'utf8')
      },
    },
  ])(
    'is answered $when with headers and no body; the connection serves the next request',
    async ({ headers, strict, status, respond }) => {
      const uncaught: unknown[] = []
      const onUncaught = (error: unknown) => uncaught.push(error)
      process.on('uncaughtException', onUncaught)
      onTestFinished(() => {
        process.off('uncaughtException', onUncaught)
      })
      const app = major.app()
      app.use(deadline({ reserveMs: 10, strict, ...(respond ? { respond } : {}) }))
      app.all('/slow', () => {
        // never answers
      })
      app.get('/ok', (_req, res) => {
        res.send('ok')
      })
      const server = createServer({ rejectNonStandardBodyWrites: true } as ServerOptions, app)
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      close = async () => {
        server.closeAllConnections()
        server.close()
        await once(server, 'close')
      }
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const agent = client({ connections: 1, headersTimeout: 2000 })
      const res = await request(`${url}/slow`, { method: 'HEAD', headers, dispatcher: agent })
      expect(await res.body.text()).toBe('')
      expect(res.statusCode).toBe(status)
      expect(Number(res.headers['content-length'])).toBeGreaterThan(0)
      const next = await request(`${url}/ok`, { dispatcher: agent })
      expect(await next.body.text()).toBe('ok')
      // A respond's body is dropped as Node drops it without the option: nothing thrown.
      expect(uncaught).toEqual([])
    },
  )
})
