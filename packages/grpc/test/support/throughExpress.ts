import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import {
  expressChannels,
  deadlineErrors as httpDeadlineErrors,
  deadline as ingressDeadline,
} from '@hourglass/express'
import express, { type NextFunction, type Request, type Response } from 'express'
import { onTestFinished } from 'vitest'
import { record } from './grpc.js'

/**
 * One request to an Express app under `deadline({ defaultMs: 60_000 })` and
 * `deadlineErrors()`, whose route is `route`; an error `deadlineErrors()`
 * passes on reaches a last handler that answers 502 and keeps it. What the
 * client saw, what was passed on, and the expire events published.
 */
export async function throughExpress(route: (res: Response, next: NextFunction) => void) {
  const expired = record(expressChannels.expire)
  onTestFinished(() => expired.stop())
  const passedOn: unknown[] = []
  const app = express()
  app.use(ingressDeadline({ defaultMs: 60_000 }))
  app.get('/', (_req, res, next) => route(res, next))
  app.use(httpDeadlineErrors())
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    passedOn.push(error)
    res.status(502).json({ passedOn: true })
  })
  const http = app.listen(0, '127.0.0.1')
  await once(http, 'listening')
  onTestFinished(() => {
    http.close()
    http.closeAllConnections()
  })
  const res = await fetch(`http://127.0.0.1:${(http.address() as AddressInfo).port}/`)
  return { res, passedOn, expired: expired.messages }
}
