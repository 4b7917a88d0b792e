import { type Deadline, isCallersBudget, readDeadline, type SlicePlan } from '@hourglass/core'
import type { RequestHandler } from 'express'
import { callHook } from './callHook.js'
import { expressChannels, type IngressInvalidHeaderMessage } from './channels.js'
import { IngressRequest } from './IngressRequest.js'
import { type DeadlineMiddlewareOptions, resolveOptions } from './options.js'

declare global {
  // Express (4 and 5) types its request through this global namespace.
  namespace Express {
    interface Request {
      /**
       * This request's deadline, set by `deadline()` from @hourglass/express.
       * It ends `reserveMs` before the caller's, when the 504 is written.
       */
      deadline: Deadline
      /** This request's slice plan, when `deadline({ plan })` was given. */
      plan?: SlicePlan | undefined
    }
  }
}

/**
 * Express middleware: give every request one absolute deadline and answer 504
 * when it runs out. The budget is the smallest valid trusted inbound header
 * (or `defaultMs`), clamped to `maxMs`; the rest of the chain runs inside it
 * (`req.deadline`, `currentDeadline()`); its signal aborts at the 504 and when
 * the client leaves; every timer and listener is released when the response
 * is over.
 */
export function deadline(
  options: DeadlineMiddlewareOptions = {},
  ...misuse: never[]
): RequestHandler {
  // `app.use(deadline)`: Express calls the factory with (req, res, next),
  // and the request was refused as options, its own fields listed as
  // unknown ones. Say what was meant (told by Express's `next`, third).
  if (typeof (misuse as unknown[])[1] === 'function') {
    throw new TypeError(
      'deadline is called as a middleware: mount the middleware it makes, app.use(deadline({ … }))',
    )
  }
  const resolved = resolveOptions(options)
  // Built once: this runs on every request.
  // Node's header names are lower case: each is looked up, not matched in
  // any letter case across every header (~0.2–0.4 µs a request).
  const readOptions = { maxMs: resolved.maxMs, sources: resolved.trust, lowerCaseNames: true }
  return function hourglassDeadline(req, res, next): void {
    // Mounted twice (app and router): the outer one already owns this request.
    if (IngressRequest.of(req)) {
      next()
      return
    }
    const read = readDeadline(req.headers, readOptions)
    if (read.invalid.length > 0) {
      const event: IngressInvalidHeaderMessage = { req, invalid: read.invalid }
      expressChannels.invalidHeader.publish(() => event)
      callHook(resolved.onInvalidHeader, event)
    }
    // The caller's own budget unless `maxMs` cut it or none came (`defaultMs`):
    // only its end tells the caller its budget is gone.
    const ingress = new IngressRequest(
      req,
      res,
      resolved,
      read.ms ?? resolved.defaultMs,
      isCallersBudget(read),
    )
    // In observe mode `strict` reports only (the invalid-header event and
    // hook above): dark mode measures and never changes an answer, and a
    // rollout that answered 400 refused the very traffic it was measuring.
    if (read.invalid.length > 0 && resolved.strict && !resolved.observe) {
      ingress.refuse(read.source ?? 'default', read.clamped, read.invalid)
      return
    }
    if (ingress.plan) req.plan = ingress.plan
    ingress.start(read.source ?? 'default', read.clamped, next as () => void)
  }
}
