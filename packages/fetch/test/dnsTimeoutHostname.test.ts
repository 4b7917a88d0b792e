import { Deadline } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  DnsTimeoutError,
  deadlineInterceptor,
  type LookupFunction,
} from '../src/index.js'
import { rejection } from './helpers.js'

// A DNS timeout did not say which name timed out ("name lookup timed out
// (103 ms into the attempt)", `hostname` undefined) where a failed lookup's
// DnsError names it and sets `hostname`. The timeout is raised by the
// attempt's phase timer, which knows no host; the connector that looked the
// name up names it.

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

const silent: LookupFunction = () => {} // never answers

it('createFetch: the DnsTimeoutError names the host, in its message and as `hostname`', async () => {
  const fetch = createFetch({ lookup: silent, dnsTimeoutMs: 50 })
  closers.push(fetch)
  using deadline = Deadline.after(30_000)
  const error = await rejection(fetch('http://slow.test/path', { deadline }))
  expect(error).toBeInstanceOf(DnsTimeoutError)
  expect(error).toMatchObject({ code: 'DNS_TIMEOUT', hostname: 'slow.test' })
  expect((error as Error).message).toMatch(/^name lookup timed out for slow\.test \(\d+ ms into/)
  expect(String((error as Error).stack)).toContain('name lookup timed out for slow.test')
})

it('the interceptor: the same error names the host', async () => {
  const agent = new Agent({
    connect: createConnector({ lookup: silent, dnsTimeoutMs: 50 }),
    headersTimeout: 0,
    bodyTimeout: 0,
  })
  closers.push(agent)
  using deadline = Deadline.after(30_000)
  const error = await rejection(
    request('http://slow.test/', {
      dispatcher: agent.compose(deadlineInterceptor({ dnsTimeoutMs: 50 })),
      deadline,
    } as never),
  )
  expect(error).toMatchObject({ code: 'DNS_TIMEOUT', hostname: 'slow.test' })
  expect((error as Error).message).toContain('name lookup timed out for slow.test')
})
