import { expect, it } from 'vitest'
import { collectGarbage } from '../../core/test/support/collectGarbage.js'
import { createFetch } from '../src/index.js'
import { useHttpServer } from './helpers.js'

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

const listen = useHttpServer()

// Node's global Request is rebuilt as undici's (adoptRequest), whose signal
// follows the global Request's. Node's Request follows the caller's signal
// only through a WeakRef to an AbortController that Request alone holds:
// dropped once rebuilt, it was collected at the next GC, and an abort of the
// caller's signal mid-call no longer reached the call, which ran on to its
// answer (here, to its headers limit, and a GET was then sent again).
it("a global Request's signal aborted mid-call ends the call, a GC in between", async () => {
  let requests = 0
  let arrive = () => {}
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve
  })
  const base = await listen(() => {
    requests++ // never answers
    arrive()
  })
  const url = `${base}/`
  const fetch = createFetch({ headersTimeoutMs: 2000 })
  const controller = new AbortController()
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
