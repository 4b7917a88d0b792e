import { expect, it } from 'vitest'
import { createFetch } from '../src/index.js'

// A bad option reads the same whichever package refused it: fetch shows the
// value after "got" with core's describeValue, as express, the gateway and
// core's own checks do — a string quoted and said to be one (so '100' is not
// read as the number 100), an object or array by kind — and still names the
// option and the bad value. No call is made; nothing here measures time.

function message(options: unknown): string {
  try {
    createFetch(options as never)
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('expected the options to be refused')
}

it('names the option and shows the bad value as every package does', () => {
  expect(message({ headersTimeoutMs: '100' })).toBe(
    "headersTimeoutMs must be a finite number ≥ 0 (ms), got '100' (a string)",
  )
  expect(message({ dnsTimeoutMs: Number.NaN })).toBe(
    'dnsTimeoutMs must be a finite number ≥ 0 (ms), got NaN',
  )
  expect(message({ retry: { maxRetryAfterMs: -1 } })).toBe(
    'retry.maxRetryAfterMs must be a finite number ≥ 0 (ms), got -1',
  )
  expect(message({ retry: 'none' })).toBe(
    "retry must be an object of retry rules or false, got 'none' (a string)",
  )
  expect(message({ retry: { emptyRead: 'false' } })).toBe(
    "retry.emptyRead must be 'idempotent', true or false, got 'false' (a string)",
  )
  expect(message({ retry: { fastConnectFailure: 0 } })).toBe(
    'retry.fastConnectFailure must be true or false, got 0',
  )
  expect(message({ lookup: {} })).toBe(
    'lookup must be a dns.lookup-compatible function, got an object',
  )
  expect(message({ clock: 'system' })).toBe(
    "clock must be a Clock (now, setTimeout and clearTimeout functions), got 'system' (a string)",
  )
})

it('retry.statuses names the entry that is not a status, not just "an array"', () => {
  expect(message({ retry: { statuses: [429, 1000] } })).toBe(
    'retry.statuses must be an array of HTTP error statuses (integers 400–599: an answer below 400 is never retried), got 1000 at index 1',
  )
  expect(message({ retry: { statuses: ['503'] } })).toBe(
    "retry.statuses must be an array of HTTP error statuses (integers 400–599: an answer below 400 is never retried), got '503' (a string) at index 0",
  )
  expect(message({ retry: { statuses: 503 } })).toBe(
    'retry.statuses must be an array of HTTP error statuses (integers 400–599: an answer below 400 is never retried), got 503',
  )
})

it('a per-call signal that is not an AbortSignal is refused by name, before anything listens to it', async () => {
  const fetch = createFetch()
  try {
    const refused = await fetch('http://127.0.0.1:65535/', { signal: {} as AbortSignal }).then(
      () => undefined,
      (error: unknown) => error,
    )
    // It read "signal.addEventListener is not a function".
    expect(refused).toBeInstanceOf(TypeError)
    expect((refused as Error).message).toBe('signal must be an AbortSignal, got an object')
  } finally {
    await fetch.close()
  }
})

it('a method that is not a string is converted as fetch converts it, not a TypeError of ours', async () => {
  const fetch = createFetch()
  try {
    // A data: URL answers whatever the method; no socket is opened.
    const res = await fetch('data:,ok', { method: 5 as unknown as string })
    expect(await res.text()).toBe('ok')
  } finally {
    await fetch.close()
  }
})
