import { Deadline } from '@hourglass/core'
import { expect, it } from 'vitest'
import { createFetch, isUnexpectedRedirect, UnexpectedRedirectError } from '../src/index.js'
import { recordEgress, useHttpServer } from './helpers.js'

// `redirect: 'error'` asks fetch to fail on a redirect. undici fails it with
// a bare `Error('unexpected redirect')` inside its "fetch failed": createFetch
// passed on that bare Error — no code, no guard, nothing saying which status
// or where to — so a caller could match it only on undici's wording.

const listen = useHttpServer()

it("redirect: 'error' on a 302 rejects with UnexpectedRedirectError naming the status and the resolved Location, sent once", async () => {
  let requests = 0
  const base = await listen((_req, res) => {
    requests++
    res.writeHead(302, { location: '/next?sig=secret' }).end('moved')
  })
  const events = recordEgress()
  const fetch = createFetch()
  let error: unknown
  try {
    await fetch(`${base}/start`, { redirect: 'error', deadline: Deadline.after(2000) })
  } catch (thrown) {
    error = thrown
  } finally {
    events.stop()
    await fetch.close()
  }
  expect(isUnexpectedRedirect(error)).toBe(true)
  expect(error).toBeInstanceOf(UnexpectedRedirectError)
  expect(error).toMatchObject({
    code: 'UNEXPECTED_REDIRECT',
    status: 302,
    location: `${base}/next?sig=secret`,
    cause: { message: 'unexpected redirect' },
  })
  // The message is logged: the Location's query (a signature) stays out of it.
  expect((error as Error).message).not.toContain('secret')
  expect(requests).toBe(1)
  // The attempt itself got its answer: the 302.
  expect(events.ends.map((e) => e.statusCode)).toEqual([302])
  expect(events.retries).toHaveLength(0)
})

// Review: the why of a skipped retry was `after-first-byte` for a redirect
// with a body (its bytes counted) and `not-retryable` without one.
it.each([
  ['with a body', 'moved'],
  ['without a body', ''],
])(
  "redirect: 'error' on a 302 %s: retry-skipped says not-retryable either way",
  async (_, body) => {
    const base = await listen((_req, res) => {
      res.writeHead(302, { location: '/next' }).end(body)
    })
    const events = recordEgress()
    const fetch = createFetch()
    const error = await fetch(`${base}/start`, { redirect: 'error' }).catch((e: unknown) => e)
    events.stop()
    await fetch.close()
    expect(isUnexpectedRedirect(error)).toBe(true)
    expect(events.skipped.map((s) => s.why)).toEqual(['not-retryable'])
  },
)
