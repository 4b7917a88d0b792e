import type { Clock } from '@hourglass/core'
import type { NextFunction, Request, Response } from 'express'
import type { Dispatcher } from 'undici'
import { type DeadlineMiddlewareOptions, deadline } from '../../src/index.js'
import type { useServer } from './oneServer.js'
import { deferred, type majors } from './servers.js'

/**
 * GET / on `major` behind `deadline({ defaultMs: 1000, reserveMs: 10,
 * ...options })` (the 504 due at 990 ms on `options.clock`), its handler
 * `handle`; resolves once the handler has run: its `res`, and the answer
 * the client is still waiting for.
 */
export async function enterHandler(
  major: (typeof majors)[number],
  served: ReturnType<typeof useServer>,
  options: DeadlineMiddlewareOptions & { clock: Clock },
  handle: (req: Request, res: Response, next: NextFunction) => void,
): Promise<{ res: Response; pending: Promise<Dispatcher.ResponseData> }> {
  const app = major.app()
  const entered = deferred<Response>()
  app.use(deadline({ defaultMs: 1000, reserveMs: 10, ...options }))
  app.get('/', (req, res, next) => {
    handle(req, res, next)
    entered.resolve(res)
  })
  const { pending } = await served.send(app)
  return { res: await entered.promise, pending }
}
