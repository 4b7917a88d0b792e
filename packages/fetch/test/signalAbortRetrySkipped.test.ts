import { ClientClosedError, Deadline, DeadlineExceededError } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// The caller's own signal ending a call before its headers (the signal
// `plan.run` hands a step, aborted when the client leaves or the slice runs
// out) is never retried, and `retry-skipped` says why — as it does for the
// same departure through a cancelled deadline, through the interceptor, or
// during the body read. createFetch said nothing in this one case, so
// `hourglass.deadline.retries{why=aborted}` depended on whether the handler
// passed `{ signal }` on.

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function hanging(): Promise<FaultServer> {
  const server = await faultServer({ type: 'hang' })
  closers.push(server)
  return server
}
function client() {
  const fetch = createFetch()
  closers.push(fetch)
  return fetch
}

const skipped = () => events?.skipped.map(({ reason, why }) => ({ reason, why }))

it("createFetch: the caller's signal aborted before the headers is skipped for `aborted`", async () => {
  const server = await hanging()
  using deadline = Deadline.after(30_000)
  events = recordEgress()
  const caller = new AbortController()
  const call = rejection(client()(server.url, { deadline, signal: caller.signal }))
  await server.request(0)
  caller.abort(new ClientClosedError())
  expect(await call).toMatchObject({ code: 'CLIENT_CLOSED' })
  await server.clientGone(0)

  expect(skipped()).toEqual([{ reason: 'CLIENT_CLOSED', why: 'aborted' }])
})

it('createFetch: a plain abort() is `aborted`, a slice signal that ran out `no-budget`', async () => {
  const server = await hanging()
  using deadline = Deadline.after(30_000)
  events = recordEgress()
  const fetch = client()
  const plain = new AbortController()
  const first = rejection(fetch(server.url, { deadline, signal: plain.signal }))
  await server.request(0)
  plain.abort()
  expect(await first).toMatchObject({ name: 'AbortError' })
  const slice = new AbortController()
  const second = rejection(fetch(server.url, { deadline, signal: slice.signal }))
  await server.request(1)
  slice.abort(new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100, slice: 'model' }))
  expect(await second).toMatchObject({ code: 'DEADLINE_EXCEEDED' })

  expect(skipped()).toEqual([
    { reason: 'AbortError', why: 'aborted' },
    { reason: 'DEADLINE_EXCEEDED', why: 'no-budget' },
  ])
})

it('the same through a cancelled deadline and through the interceptor (the controls)', async () => {
  const server = await hanging()
  events = recordEgress()
  const cancelled = Deadline.after(30_000)
  const viaDeadline = rejection(client()(server.url, { deadline: cancelled }))
  await server.request(0)
  cancelled.cancel(new ClientClosedError())
  expect(await viaDeadline).toMatchObject({ code: 'CLIENT_CLOSED' })

  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  closers.push(agent)
  const caller = new AbortController()
  const viaInterceptor = rejection(
    request(server.url, {
      dispatcher: agent.compose(deadlineInterceptor()),
      signal: caller.signal,
    }),
  )
  await server.request(1)
  caller.abort(new ClientClosedError())
  expect(await viaInterceptor).toMatchObject({ code: 'CLIENT_CLOSED' })

  expect(skipped()).toEqual([
    { reason: 'CLIENT_CLOSED', why: 'aborted' },
    { reason: 'CLIENT_CLOSED', why: 'aborted' },
  ])
})

it('a caller abort with `retry: false` announces no decision', async () => {
  const server = await hanging()
  events = recordEgress()
  const caller = new AbortController()
  const call = rejection(client()(server.url, { signal: caller.signal, retry: false }))
  await server.request(0)
  caller.abort(new ClientClosedError())
  await call
  expect(skipped()).toEqual([])
})
