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
  },
)
