import { EventEmitter } from 'node:events'
import type { Server } from 'node:http'
import { performance } from 'node:perf_hooks'
import { expect, it } from 'vitest'
import { afterWaitingConnections } from '../../src/http/afterPendingReads.js'

/**
 * close() accepts the connections waiting at a stop (one per turn of the
 * loop) before it closes the listener. Under a steady stream of new ones —
 * a load balancer still routing to the instance, each turn of a busy loop
 * taking a few ms — it went on for up to 511 turns: 5.4 s in a review's
 * run, every new connection answered 503 where a drain refuses them.
 * Bounded at 100 ms now.
 */
it('stops accepting after 100 ms however many connections keep coming', async () => {
  const server = new EventEmitter() as unknown as Server
  let feeding = true
  // A connection every turn, and 2 ms of other work each time.
  const feed = () => {
    if (!feeding) return
    server.emit('connection')
    const end = performance.now() + 2
    while (performance.now() < end) {}
    setImmediate(feed)
  }
  setImmediate(feed)
  const started = performance.now()
  await afterWaitingConnections(server)
  const tookMs = performance.now() - started
  feeding = false
  // 100 ms and a turn; unbounded, 511 turns of ≥ 4 ms each (two feeds a turn): over 2 s.
  expect(tookMs).toBeLessThan(600)
  expect(server.listenerCount('connection')).toBe(0)
})
