import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { collectGarbage } from '../../core/test/support/collectGarbage.js'
import { createFetch } from '../src/index.js'

/**
 * The call made as `fetch(new Request(url, { signal }))` is, in a frame of
 * its own that ends at once: nothing but the call keeps the Request (an
 * async test's suspended frame may hold its temporaries).
 */
function startCall(
  fetch: ReturnType<typeof createFetch>,
  url: string,
  signal: AbortSignal,
): ReturnType<ReturnType<typeof createFetch>> {
  return fetch(new globalThis.Request(url, { signal }))
}

let server: Server | undefined
afterEach(async () => {
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

// Node's global Request is rebuilt as undici's (adoptRequest), whose signal
// follows the global Request's. Node's Request follows the caller's signal
// only through a WeakRef to an AbortController that Request alone holds:
// dropped once rebuilt, it was collected at the next GC, and an abort of the
// caller's signal mid-call no longer reached the call, which ran on to its
// answer (here, to its headers limit, and a GET was then sent again).
it("a global Request's signal aborted mid-call ends the call, a GC in between", async () => {
  let requests = 0
  server = createServer(() => {
    requests++ // never answers
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const fetch = createFetch({ headersTimeoutMs: 2000 })
  const controller = new AbortController()
  const arrived = once(server, 'request')
  const call = startCall(fetch, url, controller.signal)
  call.catch(() => {})
  try {
    await arrived
    // After the job that made the Request ended: a WeakRef's target is kept until then.
    await new Promise((resolve) => setImmediate(resolve))
    collectGarbage()
    controller.abort(new Error('caller gave up'))
    await expect(call).rejects.toThrow('caller gave up')
    expect(requests).toBe(1) // not sent again after the caller left
  } finally {
    await fetch.close()
  }
})
