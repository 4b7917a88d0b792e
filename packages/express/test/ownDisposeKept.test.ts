import type { Deadline } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

// A handler that cancels `req.deadline` gets a `dispose` of the ingress's own
// on it (so disposing lifts the 504 still due). One the handler then sets on
// the deadline itself (a wrapper of its own) is the handler's: the ingress
// took it off when the response ended.

describe.each(majors)('a dispose the handler sets on a cancelled deadline ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('stays on the deadline after the response', async () => {
    const app = major.app()
    let seen: Deadline | undefined
    const own = function (this: Deadline): void {}
    app.use(deadline({ defaultMs: 5000 }))
    app.get('/', (req, res) => {
      seen = req.deadline
      req.deadline.cancel(new Error('stop the prework'))
      ;(req.deadline as { dispose: () => void }).dispose = own
      res.end('ok')
    })
    server = await listen(app)
    const answer = await request(server.url, { dispatcher: client() })
    expect([answer.statusCode, await answer.body.text()]).toEqual([200, 'ok'])
    expect(Object.getOwnPropertyDescriptor(seen, 'dispose')?.value).toBe(own)
  })
})
