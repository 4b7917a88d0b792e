import { ManualClock } from '@hourglass/core'
import type { Response } from 'express'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { type DeadlineMiddlewareOptions, deadline } from '../src/index.js'
import { enterHandler } from './support/enterHandler.js'
import { useServer } from './support/oneServer.js'
import { client, listen, majors } from './support/servers.js'

/**
 * A handler that set its caching for a CDN or a proxy cache before the work
 * that ran out: `CDN-Cache-Control` (RFC 9213, and each CDN's own
 * `<name>-CDN-Cache-Control`), `Surrogate-Control` (Fastly, Akamai,
 * Varnish), nginx's `X-Accel-Expires`. Each is that cache's own word, taken
 * over `Cache-Control`: RFC 9213's example is exactly `CDN-Cache-Control:
 * max-age=600` beside `Cache-Control: no-store`, which a CDN keeps for 600
 * s. The 504's `no-store` was ignored, and the CDN served the deadline's
 * answer to the next callers for as long as the handler's policy said.
 */
function cachedForTheEdge(res: Response): void {
  res.setHeader('cache-control', 'public, max-age=600')
  res.setHeader('cdn-cache-control', 'max-age=600')
  res.setHeader('cloudflare-cdn-cache-control', 'max-age=3600')
  res.setHeader('Vercel-CDN-Cache-Control', 'max-age=3600')
  res.setHeader('surrogate-control', 'max-age=600')
  res.setHeader('x-accel-expires', '600')
  res.setHeader('surrogate-key', 'report-1')
}

const EDGE_CACHING = [
  'cdn-cache-control',
  'cloudflare-cdn-cache-control',
  'vercel-cdn-cache-control',
  'surrogate-control',
  'x-accel-expires',
]

describe.each(majors)('a 504 after the handler set caching for a CDN or proxy ($name)', (major) => {
  const served = useServer()

  it.each([
    ['the plain 504', {}],
    [
      "respond's answer",
      {
        respond: (_req, res) => {
          res.status(504).json({ error: { code: 'deadline_exceeded' } })
        },
      } satisfies DeadlineMiddlewareOptions,
    ],
  ] as const)(
    '%s carries none of its targeted cache headers: no cache keeps it',
    async (_name, options) => {
      const clock = new ManualClock()
      const { pending } = await enterHandler(major, served, { clock, ...options }, (_req, res) => {
        cachedForTheEdge(res)
      })
      clock.advance(990)
      const answer = await pending
      expect(answer.statusCode).toBe(504)
      await answer.body.dump()
      const present = EDGE_CACHING.filter((name) => answer.headers[name] !== undefined)
      expect(present).toEqual([])
      // A cache tag names what the answer is about, not how long to keep it: it stays.
      expect(answer.headers['surrogate-key']).toBe('report-1')
    },
  )

  it("strict's 400 for a malformed deadline header carries none that a middleware ahead set: a CDN does not serve it to well-formed callers of the URL", async () => {
    const app = major.app()
    // Site-wide edge caching, ahead of deadline().
    app.use((_req, res, next) => {
      cachedForTheEdge(res)
      next()
    })
    app.use(deadline({ strict: true }))
    app.get('/', (_req, res) => {
      res.json({ ok: true })
    })
    const server = await listen(app)
    try {
      const answer = await request(server.url, {
        headers: { 'x-deadline-remaining-ms': 'soon' },
        dispatcher: client(),
      })
      expect(answer.statusCode).toBe(400)
      await answer.body.dump()
      expect(EDGE_CACHING.filter((name) => answer.headers[name] !== undefined)).toEqual([])
      expect(answer.headers['cache-control']).toBe('no-store')
    } finally {
      await server.close()
    }
  })
})
