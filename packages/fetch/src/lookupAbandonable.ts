import { lookup as dnsLookup } from 'node:dns'
import type { LookupFunction } from './options.js'

type Callback = Parameters<LookupFunction>[2]

const inflight = new Map<string, Callback[]>()

/**
 * `dns.lookup` (getaddrinfo: honours /etc/hosts and nsswitch, like Node's
 * own connect), with concurrent lookups of the same name sharing one call.
 *
 * getaddrinfo cannot be cancelled: it runs on libuv's 4-thread pool until the
 * resolver gives up. The connector therefore *abandons* a slow lookup (stops
 * waiting when the DNS limit or the deadline fires) and coalescing keeps a
 * dead resolver from filling the thread pool with one stuck job per request.
 */
export const coalescedLookup: LookupFunction = (hostname, options, callback) => {
  const key = `${hostname}|${options.family ?? 0}|${options.all ? 1 : 0}`
  const waiting = inflight.get(key)
  if (waiting) {
    waiting.push(callback)
    return
  }
  const callbacks = [callback]
  inflight.set(key, callbacks)
  const settle: Callback = (error, address, family) => {
    inflight.delete(key)
    for (const cb of callbacks) cb(error, address, family)
  }
  const family = options.family ?? 0
  try {
    dnsLookup(hostname, { family, all: options.all ?? false }, (error, address, answered) =>
      settle(error, address as never, answered),
    )
  } catch (error) {
    // An invalid name throws synchronously: free the slot, or later lookups of it would wait forever.
    settle(error as NodeJS.ErrnoException, '')
  }
}
