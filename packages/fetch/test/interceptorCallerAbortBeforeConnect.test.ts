import { getEventListeners } from 'node:events'
import { Deadline } from '@hourglass/core'
import { Agent, request } from 'undici'
import { expect, it } from 'vitest'
import { createConnector, deadlineInterceptor } from '../src/index.js'
import { CountingClock, rejection } from './helpers.js'

// undici's own request handler acts on its `signal` only once the
// connection is up (the abort reaches it through onConnect). Through the
// interceptor, a caller that aborted while the name was still being looked
// up (or the socket connecting) waited for that phase's limit, and then got
// DNS_TIMEOUT instead of its own reason. The lookup here never answers and
// its limit is far beyond the test's timeout: only the abort can end the call.

it("the caller's abort during the DNS/connect phase ends the call at once, with the caller's reason, leaving nothing behind", async () => {
  const clock = new CountingClock()
  let lookupStarted: () => void = () => {}
  const looking = new Promise<void>((resolve) => {
    lookupStarted = resolve
  })
  const options = {
    clock,
    dnsTimeoutMs: 60_000,
    lookup: () => lookupStarted(), // never calls back
  }
  const agent = new Agent({ connect: createConnector(options) })
  const dispatcher = agent.compose(deadlineInterceptor(options))
  const deadline = Deadline.after(120_000, { clock })
  const caller = new AbortController()
  const reason = new Error('caller gave up')

  const pending = request('http://never-resolves.test/', {
    dispatcher,
    deadline,
    signal: caller.signal,
  } as never)
  await looking
  caller.abort(reason)

  expect(await rejection(pending)).toBe(reason)
  expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0)
  expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0)
  deadline.dispose()
  expect(clock.pending).toBe(0) // the DNS limit's timer and the deadline's: both released
  await agent.close()
}, 10_000)
