import { once } from 'node:events'
import { createServer, type ServerOptions } from 'node:http'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { client, majors } from './support/servers.js'

// Node's `rejectNonStandardBodyWrites` server option (20.13+) makes a body
// written to a response that may not have one (a HEAD's) throw
// ERR_HTTP_BODY_NOT_ALLOWED instead of being dropped. The 504 wrote its JSON
// body to HEAD requests too: from the deadline's timer, an uncaught
// exception that took the process down, and the caller got no answer.

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
  ])(
    'is answered $when with headers and no body; the connection serves the next request',
    async ({ headers, strict, status }) => {
      const app = major.app()
      app.use(deadline({ reserveMs: 10, strict }))
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
    },
  )
})
