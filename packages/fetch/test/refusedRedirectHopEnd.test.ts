import { expect, it } from 'vitest'
import { createFetch } from '../src/index.js'
import { recordEgress, useHttpServer } from './helpers.js'

// A redirect hop whose answer has ended (a short body, the usual case)
// published its attempt-end at once, before fetch decided what to do with
// the redirect: `followed: true` and no error, even when fetch then failed
// the call at it (a stream body, the redirect limit, a Location it refuses,
// a next hop refused for the budget: redirectHopEvents.test.ts) and nothing
// went to the target. The same refusal with a body over ~64 KB (still open
// when fetch failed) said the error and `followed: true`. The README:
// `followed` is "`true` when fetch follows it (this hop is not the call's
// answer, its target is)", and a hop fetch fails at ends with "its status
// (and that error, if any)".

const serve = useHttpServer()

/** 307 to /dest (a 200 KB body under /big), /loopN 302 to /loopN+1, /dest its target. */
function listen(): Promise<string> {
  return serve((req, res) => {
    req.resume()
    const url = req.url ?? '/'
    const body = url.startsWith('/big') ? 'x'.repeat(200_000) : ''
    if (url.startsWith('/loop')) {
      const n = Number(url.slice(5))
      res.writeHead(302, { location: `/loop${n + 1}` }).end()
    } else if (url.startsWith('/dest')) {
      res.end('target')
    } else {
      res.writeHead(307, { location: '/dest', 'content-length': body.length }).end(body)
    }
  })
}

const oneByte = () =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array(1))
      controller.close()
    },
  })

it.each(['/empty', '/big'])(
  'a stream body answered 307 (%s): the hop ends with REDIRECT_WITH_STREAM_BODY, not followed',
  async (path) => {
    const base = await listen()
    const events = recordEgress()
    const fetch = createFetch()
    try {
      await expect(
        fetch(`${base}${path}`, { method: 'POST', body: oneByte(), duplex: 'half' } as RequestInit),
      ).rejects.toMatchObject({ code: 'REDIRECT_WITH_STREAM_BODY' })
    } finally {
      events.stop()
      await fetch.close()
    }
    expect(events.ends).toHaveLength(1)
    expect(events.ends[0]).toMatchObject({
      statusCode: 307,
      errorCode: 'REDIRECT_WITH_STREAM_BODY',
    })
    expect(events.ends[0]?.followed).toBeUndefined()
  },
)

it("redirect: 'error' with an empty redirect body: the hop ends with UNEXPECTED_REDIRECT, as with a long one", async () => {
  const base = await listen()
  const events = recordEgress()
  const fetch = createFetch()
  try {
    await expect(fetch(`${base}/empty`, { redirect: 'error' })).rejects.toMatchObject({
      code: 'UNEXPECTED_REDIRECT',
    })
  } finally {
    events.stop()
    await fetch.close()
  }
  expect(events.ends.map((e) => [e.statusCode, e.errorCode, e.followed])).toEqual([
    [307, 'UNEXPECTED_REDIRECT', undefined],
  ])
})

it('the redirect limit: the last hop says TOO_MANY_REDIRECTS, the ones fetch followed say followed', async () => {
  const base = await listen()
  const events = recordEgress()
  const fetch = createFetch()
  try {
    await expect(fetch(`${base}/loop0`)).rejects.toMatchObject({ code: 'TOO_MANY_REDIRECTS' })
  } finally {
    events.stop()
    await fetch.close()
  }
  expect(events.ends).toHaveLength(21)
  expect(
    events.ends.slice(0, 20).every((e) => e.followed === true && e.errorCode === undefined),
  ).toBe(true)
  expect(events.ends[20]).toMatchObject({ statusCode: 302, errorCode: 'TOO_MANY_REDIRECTS' })
  expect(events.ends[20]?.followed).toBeUndefined()
})

it.each(['/empty', '/big'])(
  'a redirect fetch follows (%s) still says followed: true, once, before its target',
  async (path) => {
    const base = await listen()
    const events = recordEgress()
    const fetch = createFetch()
    try {
      const res = await fetch(`${base}${path}`, { method: 'POST', body: 'x' })
      expect(await res.text()).toBe('target')
    } finally {
      events.stop()
      await fetch.close()
    }
    expect(events.ends.map((e) => [e.statusCode, e.errorCode, e.followed, e.redirect])).toEqual([
      [307, undefined, true, undefined],
      [200, undefined, undefined, 1],
    ])
  },
)
