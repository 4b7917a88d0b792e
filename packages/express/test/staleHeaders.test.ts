import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { listen, majors, type Running } from './support/servers.js'

/**
 * Headers a handler set for the body it meant to send describe other bytes
 * than the 504's JSON: a client would gunzip plain JSON, cache it under a
 * validator, save it as a download, or reject it for a checksum that does
 * not match. The 504 goes out without them.
 */
describe.each(majors)(
  'the 504 drops headers that describe the body the handler meant to send ($name)',
  (major) => {
    let server: Running | undefined
    afterEach(async () => {
      await server?.close()
      server = undefined
    })

    it('content-encoding, validators, disposition, location and digests are gone; the JSON body parses', async () => {
      const app = major.app()
      app.use(deadline({ reserveMs: 5 }))
      app.get('/report', (req, res) => {
        res.setHeader('content-encoding', 'gzip')
        res.setHeader('etag', '"v1"')
        res.setHeader('last-modified', 'Tue, 01 Dec 2026 10:00:00 GMT')
        res.setHeader('content-disposition', 'attachment; filename="report.csv"')
        res.setHeader('content-location', '/reports/1.csv')
        res.setHeader('content-md5', 'Q2hlY2sgSW50ZWdyaXR5IQ==')
        res.setHeader('digest', 'sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=')
        res.setHeader('content-digest', 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:')
        res.setHeader('repr-digest', 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:')
        res.setHeader('x-kept', 'yes')
        // Never answers: the deadline does.
        req.deadline.onDone(() => {})
      })
      server = await listen(app)
      const res = await request(`${server.url}/report`, {
        headers: { 'x-deadline-remaining-ms': '40' },
      })
      expect(res.statusCode).toBe(504)
      expect(await res.body.json()).toMatchObject({ error: 'deadline_exceeded' })
      for (const name of [
        'content-encoding',
        'etag',
        'last-modified',
        'content-disposition',
        'content-location',
        'content-md5',
        'digest',
        'content-digest',
        'repr-digest',
      ]) {
        expect(res.headers[name], name).toBeUndefined()
      }
      // Headers that do not describe the body stay.
      expect(res.headers['x-kept']).toBe('yes')
    })

    it("a redirect target the handler set goes (location, refresh); cookies and CORS stay, as on Express's own error answer", async () => {
      const app = major.app()
      app.use(deadline({ reserveMs: 5 }))
      app.post('/login', (req, res) => {
        // A handler that chose where to send the caller, then ran out of
        // time before it answered: a 504 naming that target (a browser
        // follows `Refresh` on any status) sends the caller on as if the
        // request had worked.
        res.location('/welcome')
        res.setHeader('refresh', '0; url=/welcome')
        // finalhandler keeps these on its error answers (it removes only
        // content-encoding, -language and -range): so does the 504. A
        // browser that cannot read the 504 (no CORS header) sees a network
        // error instead of a timeout.
        res.cookie('sid', 'abc')
        res.setHeader('access-control-allow-origin', 'https://app.example')
        res.vary('origin')
        req.deadline.onDone(() => {})
      })
      server = await listen(app)
      const res = await request(`${server.url}/login`, {
        method: 'POST',
        headers: { 'x-deadline-remaining-ms': '40' },
      })
      expect(res.statusCode).toBe(504)
      await res.body.dump()
      expect(res.headers.location).toBeUndefined()
      expect(res.headers.refresh).toBeUndefined()
      expect(res.headers['set-cookie']).toBe('sid=abc; Path=/')
      expect(res.headers['access-control-allow-origin']).toBe('https://app.example')
      expect(res.headers.vary).toBe('origin')
    })
  },
)
