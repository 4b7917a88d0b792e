import { ClientClosedError, Deadline, ManualClock } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { fetchChannels } from '../src/channels.js'
import { createFetch, type HourglassFetch } from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'
import { frozenClock } from './support/frozenClock.js'

// createFetch follows redirects inside one attempt, each hop a dispatch of
// its own with its own `attempt` / `attempt-end` events. Every hop was
// reported under the URL the caller gave, so a trace read "GET /start → 302,
// GET /start → 200": the target that answered never appeared. Each hop now
// names its own URL (origin + path), keeps its attempt's number and says
// which redirect it followed (`redirect`: 1 for the first). No test here
// measures time.

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}
function client(options: Parameters<typeof createFetch>[0] = {}): HourglassFetch {
  const fetch = createFetch(options)
  closers.push(fetch)
  return fetch
}

it("each redirect hop's events carry that hop's URL and the same attempt number", async () => {
  const server = await serve((r) => {
    if (r.url === '/start') {
      return { type: 'respond', status: 302, headers: { location: '/middle?token=secret' } }
    }
    if (r.url.startsWith('/middle')) {
      return { type: 'respond', status: 307, headers: { location: '/final' } }
    }
    return { type: 'respond', body: 'here' }
  })
  events = recordEgress()
  const res = await client()(`${server.url}/start`)
  expect(await res.text()).toBe('here')

  const base = server.url.replace(/\/$/, '')
  expect(events.attempts.map(({ url, attempt, redirect }) => ({ url, attempt, redirect }))).toEqual(
    [
      { url: `${base}/start`, attempt: 1, redirect: undefined },
      { url: `${base}/middle`, attempt: 1, redirect: 1 }, // no query: it may carry secrets
      { url: `${base}/final`, attempt: 1, redirect: 2 },
    ],
  )
  // Each end matches its start (by handle) and says what that hop got.
  expect(
    events.ends.map((end) => {
      const start = events!.attempts.find((a) => a.handle === end.handle)
      return {
        url: end.url,
        same: start?.url === end.url,
        redirect: end.redirect,
        status: end.statusCode,
      }
    }),
  ).toEqual([
    { url: `${base}/start`, same: true, redirect: undefined, status: 302 },
    { url: `${base}/middle`, same: true, redirect: 1, status: 307 },
    { url: `${base}/final`, same: true, redirect: 2, status: 200 },
  ])
})

it('a retry after a redirect is the next attempt, starting again at the first URL', async () => {
  // A refused connect measured as fast: see support/frozenClock.ts.
  const frozen = frozenClock
  const server: FaultServer = await serve(() => ({
    type: 'respond',
    status: 302,
    headers: { location: `http://127.0.0.2:${server.port}/moved` },
  }))
  events = recordEgress()
  await rejection(client({ clock: frozen })(server.url))

  const origin = server.url.replace(/\/$/, '')
  const target = `http://127.0.0.2:${server.port}/moved`
  expect(events.attempts.map(({ url, attempt, redirect }) => ({ url, attempt, redirect }))).toEqual(
    [
      { url: `${origin}/`, attempt: 1, redirect: undefined },
      { url: target, attempt: 1, redirect: 1 },
      { url: `${origin}/`, attempt: 2, redirect: undefined },
      { url: target, attempt: 2, redirect: 1 },
    ],
  )
  expect(events.ends.map((e) => [e.url, e.errorCode ?? e.statusCode])).toEqual([
    [`${origin}/`, 302],
    [target, 'CONNECT_FAILED'],
    [`${origin}/`, 302],
    [target, 'CONNECT_FAILED'],
  ])
  // The retry decision is the call's: it names the URL the call starts from.
  expect(events.retries).toMatchObject([{ url: `${origin}/`, attempt: 2 }])
})

it('a deadline cancelled between two redirect hops fails the call with its reason, sending no second hop', async () => {
  // The next hop's attempt is stopped before it is sent (the interceptor's
  // "ended before it was sent" path): fetch's own handler must hear it in
  // its own API, or the call would never settle.
  const seen: string[] = []
  const server = await serve((r) => {
    seen.push(r.url)
    if (r.url === '/start') return { type: 'respond', status: 302, headers: { location: '/next' } }
    return { type: 'respond', body: 'here' }
  })
  const deadline = Deadline.after(30_000)
  const reason = new ClientClosedError()
  // The first hop's attempt-end: its attempt has let go of the deadline, and
  // fetch has yet to dispatch the redirect.
  const onEnd = (m: { statusCode?: number | undefined }) => {
    if (m.statusCode === 302) deadline.cancel(reason)
  }
  fetchChannels.attemptEnd.subscribe(onEnd)
  try {
    const error = await rejection(client()(`${server.url}/start`, { deadline }))
    expect(error).toBe(reason)
    expect(seen).toEqual(['/start'])
  } finally {
    fetchChannels.attemptEnd.unsubscribe(onEnd)
    deadline.dispose()
  }
})

it('a redirect that arrives with less than minBudgetMs left is not followed: nothing reaches its target', async () => {
  // fetch dispatches the hop whenever the redirect arrives. The first
  // attempt and every retry are refused under minBudgetMs; the hop went out
  // all the same (with the deadline at 0 and its timer late on a busy loop,
  // too), for a caller already failing.
  const seen: string[] = []
  const server = await serve((r) => {
    seen.push(r.url)
    // As the 302 is answered, 3 ms are left: under the default minBudgetMs (5).
    if (r.url === '/start') {
      clock.advance(997)
      return { type: 'respond', status: 302, headers: { location: '/next' } }
    }
    return { type: 'respond', body: 'here' }
  })
  const clock = new ManualClock()
  const deadline = Deadline.after(1000, { clock })
  events = recordEgress()
  try {
    const error = await rejection(client()(`${server.url}/start`, { deadline }))
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect(seen).toEqual(['/start'])
    // The hop was never sent: no attempt of its own, and the call's end said so.
    expect(events.attempts.map((m) => m.redirect)).toEqual([undefined])
    // Its 302's hop ended with the refusal, not followed (it said followed, no error).
    expect(events.ends.map((m) => [m.statusCode, m.errorCode, m.followed])).toEqual([
      [302, 'DEADLINE_EXCEEDED', undefined],
    ])
    expect(events.skipped.map((m) => m.why)).toEqual(['no-budget'])
  } finally {
    deadline.dispose()
  }
})
