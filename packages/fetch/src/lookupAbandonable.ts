import { lookup as dnsLookup } from 'node:dns'
import type { LookupFunction } from './options.js'

type Callback = Parameters<LookupFunction>[2]

/** One name being looked up (or waiting its turn), and who still waits for it. */
interface Lookup {
  readonly key: string
  readonly hostname: string
  readonly family: number
  readonly all: boolean
  /** Callers still waiting: one that gave up (its limit fired) is taken out. */
  readonly callbacks: Set<Callback>
  started: boolean
  settled: boolean
}

/** Every name looked up or waiting, by name, family and `all`: a second caller joins it. */
const inflight = new Map<string, Lookup>()
/** Names waiting for a free lookup, oldest first. */
const queued = new Set<Lookup>()
let running = 0

/**
 * getaddrinfo runs on libuv's thread pool (UV_THREADPOOL_SIZE, 4 by
 * default): more lookups at once than it has threads only wait in libuv's
 * queue, where nothing can take them out again. They wait here instead.
 */
const MAX_RUNNING = threadPoolSize()

/**
 * `dns.lookup` (getaddrinfo: honours /etc/hosts and nsswitch, like Node's
 * own connect), with concurrent lookups of the same name sharing one call;
 * returns what the caller calls when it stops waiting.
 *
 * getaddrinfo cannot be cancelled: it runs on libuv's thread pool until the
 * resolver gives up. The connector therefore *abandons* a slow lookup (stops
 * waiting when the DNS limit or the deadline fires) and coalescing keeps a
 * dead resolver from filling the thread pool with one stuck job per request.
 * Coalescing alone still queued one job per *distinct* name: with a dead
 * resolver, a service fetching URLs its users give (webhooks, link previews)
 * piled up one job per new host — each seconds long, four at a time, in the
 * pool fs, crypto and zlib share — each holding its abandoned callers, faster
 * than the pool drained them. So at most MAX_RUNNING run at
 * once; the rest wait here, and a name nobody waits for any more is dropped
 * before it is ever asked.
 */
export function lookupAbandonable(
  hostname: string,
  options: Parameters<LookupFunction>[1],
  callback: Callback,
): () => void {
  const family = options.family ?? 0
  const all = options.all ?? false
  const key = `${hostname}|${family}|${all ? 1 : 0}`
  let entry = inflight.get(key)
  if (entry) {
    entry.callbacks.add(callback)
  } else {
    entry = {
      key,
      hostname,
      family,
      all,
      callbacks: new Set([callback]),
      started: false,
      settled: false,
    }
    inflight.set(key, entry)
    if (running < MAX_RUNNING) start(entry)
    else queued.add(entry)
  }
  const lookup = entry
  return () => abandon(lookup, callback)
}

function abandon(entry: Lookup, callback: Callback): void {
  entry.callbacks.delete(callback)
  if (entry.callbacks.size > 0 || entry.started || entry.settled) return
  // Nobody waits for a name not yet asked: it is never asked.
  queued.delete(entry)
  if (inflight.get(entry.key) === entry) inflight.delete(entry.key)
}

function start(entry: Lookup): void {
  entry.started = true
  running++
  try {
    dnsLookup(
      entry.hostname,
      { family: entry.family, all: entry.all },
      (error, address, answered) => settle(entry, error, address as never, answered),
    )
  } catch (error) {
    // An invalid name throws synchronously: free the slot, or later lookups of it would wait forever.
    settle(entry, error as NodeJS.ErrnoException, '')
  }
}

function settle(entry: Lookup, ...answer: Parameters<Callback>): void {
  if (entry.settled) return
  entry.settled = true
  running--
  if (inflight.get(entry.key) === entry) inflight.delete(entry.key)
  const callbacks = [...entry.callbacks]
  entry.callbacks.clear()
  try {
    for (const cb of callbacks) cb(...answer)
  } finally {
    // A callback that threw must not leave every later name waiting for good.
    startWaiting()
  }
}

let starting = false

/** Start the names waiting, oldest first, while a thread is free. */
function startWaiting(): void {
  // One loop at a time: a lookup that fails at once settles (and comes
  // here) inside `start`, and recursing there went one frame deeper per name.
  if (starting) return
  starting = true
  try {
    while (running < MAX_RUNNING && queued.size > 0) {
      const next = queued.values().next().value as Lookup
      queued.delete(next)
      start(next)
    }
  } finally {
    starting = false
  }
}

function threadPoolSize(): number {
  const size = Number(process.env['UV_THREADPOOL_SIZE'])
  return Number.isInteger(size) && size >= 1 ? Math.min(size, 1024) : 4
}
