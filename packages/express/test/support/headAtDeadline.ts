import type { ServerResponse } from 'node:http'
import { ManualClock } from '@hourglass/core'
import { type DeadlineMiddlewareOptions, deadline } from '../../src/index.js'
import { firstThenNext } from './pipelined.js'
import { listen, type majors } from './servers.js'

/**
 * GET /first on `major` behind `deadline({ defaultMs: 100, reserveMs: 0 })`,
 * whose handler stores a head (`head(res)`, not sent yet) and moves the
 * clock to the deadline in the same tick, then a pipelined GET /next that
 * closes the connection: every byte the server sent, read off a raw socket,
 * and the clock. The server is closed before it returns.
 */
export async function headAtDeadline(
  major: (typeof majors)[number],
  head: (res: ServerResponse) => void,
  options: { poweredBy?: boolean; respond?: DeadlineMiddlewareOptions['respond'] } = {},
): Promise<{ received: string; clock: ManualClock }> {
  const clock = new ManualClock()
  const app = major.app()
  if (options.poweredBy === false) app.disable('x-powered-by')
  app.use(deadline({ clock, defaultMs: 100, reserveMs: 0, respond: options.respond }))
  app.get('/first', (_req, res) => {
    head(res)
    clock.advance(100) // the deadline, before the first byte is written
  })
  app.get('/next', (_req, res) => {
    res.send('next')
  })
  const server = await listen(app)
  try {
    return { received: await firstThenNext(server.url), clock }
  } finally {
    await server.close()
  }
}
