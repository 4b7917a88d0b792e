import { faultServer } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor } from '../src/index.js'
import { recordEgress, rejection } from './helpers.js'

// An answer below 400 is never retried (decideRetry returns before the
// rules): `retry: { statuses: [202] }` was accepted and did nothing, no
// event said so. And the factory kept the caller's array: a status pushed
// afterwards changed its rules, unchecked.

describe('retry.statuses', () => {
  it('refuses a status below 400, at the factory and in the interceptor', () => {
    for (const statuses of [[202], [304], [307], [399], [100, 503]]) {
      expect(() => createFetch({ retry: { statuses } })).toThrow(/retry\.statuses.*400–599/)
      expect(() => deadlineInterceptor({ retry: { statuses } })).toThrow(/retry\.statuses/)
    }
    expect(() => createFetch({ retry: { statuses: [400, 429, 503, 599] } })).not.toThrow()
  })

  it('per call: the promise rejects, nothing is sent', async () => {
    const fetch = createFetch()
    try {
      const error = await rejection(fetch('http://127.0.0.1:1/', { retry: { statuses: [202] } }))
      expect(error).toBeInstanceOf(RangeError)
      expect(String((error as Error).message)).toMatch(/got 202 at index 0/)
    } finally {
      await fetch.close()
    }
  })

  it('is the list given when the factory was made: an array changed afterwards changes no rule', async () => {
    const up = await faultServer({ type: 'respond', status: 429, body: 'slow down' })
    const statuses = [503]
    const fetch = createFetch({ retry: { statuses } })
    statuses.push(429)
    const events = recordEgress()
    try {
      const res = await fetch(up.url)
      await res.text()
      expect(res.status).toBe(429)
      expect(up.records).toHaveLength(1)
      expect(events.retries).toEqual([])
    } finally {
      events.stop()
      await fetch.close()
      await up.close()
    }
  })
})
