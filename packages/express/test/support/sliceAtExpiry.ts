import { ManualClock } from '@hourglass/core'
import type { Request } from 'express'
import { deadline, type IngressExpireMessage } from '../../src/index.js'
import type { useServer } from './oneServer.js'
import { deferred, type majors } from './servers.js'

/**
 * GET / on `major` behind `deadline({ defaultMs: 1000, reserveMs: 10 })`,
 * its handler `route(req, started)`; once the route calls `started()`, the
 * clock is moved to the deadline. What the 504 said: its status, the
 * `slice` of its body, and the `slice` of each expire message.
 */
export async function sliceAtExpiry(
  major: (typeof majors)[number],
  served: ReturnType<typeof useServer>,
  route: (req: Request, started: () => void) => Promise<unknown>,
): Promise<{ status: number; slice: string | null; events: Array<string | undefined> }> {
  const clock = new ManualClock()
  const expired: IngressExpireMessage[] = []
  const started = deferred()
  const app = major.app()
  app.use(deadline({ clock, defaultMs: 1000, reserveMs: 10, onExpire: (m) => expired.push(m) }))
  app.get(
    '/',
    major.route((req) => route(req, () => started.resolve())),
  )
  const { pending } = await served.send(app)
  await started.promise
  clock.advance(990)
  const res = await pending
  const body = (await res.body.json()) as { slice: string | null }
  return { status: res.statusCode, slice: body.slice, events: expired.map((m) => m.slice) }
}
