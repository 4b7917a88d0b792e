import dns from 'node:dns'
import { createServer } from 'node:http'
import { syncBuiltinESMExports } from 'node:module'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { createFetch } from '../src/index.js'

// The default lookup is getaddrinfo, on libuv's thread pool, and cannot be
// cancelled: a dead resolver holds each lookup for seconds. Coalescing kept
// one name from queueing a job per request, but every distinct name still
// queued one — a service fetching the URLs its users give piled up a stuck
// job (and its abandoned callers) per new host. dns.lookup is replaced here
// by a resolver that answers only when the test says so; no test measures time.

const POOL = Number(process.env['UV_THREADPOOL_SIZE']) || 4
const original = dns.lookup
afterEach(() => {
  dns.lookup = original
  syncBuiltinESMExports()
})

type Answer = (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void

it('a dead resolver is asked at most a thread pool of names at once; names their callers gave up on are never asked', async () => {
  // Listening looks its host up too: before the resolver dies.
  const server = createServer((_req, res) => res.end('ok'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const asked: string[] = []
  const stuck: Answer[] = []
  dns.lookup = ((hostname: string, _options: unknown, callback: Answer) => {
    asked.push(hostname)
    if (hostname === 'live.test')
      setImmediate(callback, null, [{ address: '127.0.0.1', family: 4 }])
    else stuck.push(callback)
  }) as unknown as typeof dns.lookup
  syncBuiltinESMExports()
  const hurried = createFetch({ dnsTimeoutMs: 20, retry: false })
  const patient = createFetch({ dnsTimeoutMs: 60_000, retry: false })
  try {
    const names = Array.from({ length: 40 }, (_, i) => `host${i}.dead.test`)
    const codes = await Promise.all(
      names.map((name) =>
        hurried(`http://${name}:${port}/`).then(
          () => 'answered',
          (error: { code?: string }) => error.code,
        ),
      ),
    )
    expect(new Set(codes)).toEqual(new Set(['DNS_TIMEOUT']))
    expect(asked.length, 'names sent to the resolver').toBeLessThanOrEqual(POOL)

    // A caller still waiting waits its turn, and gets it when a lookup ends.
    const live = patient(`http://live.test:${port}/`).then((res) => res.text())
    for (const answer of stuck.splice(0)) {
      answer(Object.assign(new Error('timed out'), { code: 'EAI_AGAIN' }), [])
    }
    expect(await live).toBe('ok')
    // The 40 abandoned names were never asked: only the first few, and live.test.
    expect(asked.filter((name) => name !== 'live.test').length).toBeLessThanOrEqual(POOL)
    expect(asked).toContain('live.test')
  } finally {
    for (const answer of stuck.splice(0)) answer(null, [])
    await Promise.all([hurried.close(), patient.close()])
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
})
