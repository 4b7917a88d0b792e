import type { IncomingMessage, Server, ServerResponse } from 'node:http'

/** One request as the server saw it. Times are `performance.now()` ms (the same scale as core's `systemClock`). */
export interface RequestRecord {
  /** Arrival order, from 0. */
  index: number
  method: string
  url: string
  headers: Record<string, string | string[] | undefined>
  startedAt: number
  /** When the server finished its response; undefined while working, or when it never did. */
  finishedAt: number | undefined
  /** When the client went away before the response was complete; undefined if it never did. */
  clientGoneAt: number | undefined
  /**
   * Whether the server was still working on the request when the client left
   * (the "zombie work" figure): undefined while the client is still there.
   */
  workingWhenClientLeft: boolean | undefined
  /** True when the server itself dropped the connection (a `close`/`reset` fault). */
  serverAborted: boolean
}

/** A live log of the requests a server handles, with events to await instead of polling. */
export interface RequestLog {
  readonly records: readonly RequestRecord[]
  /** Resolves when request `index` has arrived. */
  request(index?: number): Promise<RequestRecord>
  /** Resolves when the client of request `index` goes away before its response is complete. */
  clientGone(index?: number): Promise<RequestRecord>
  /** Mark request `index` as aborted by the server (not a client departure). */
  markServerAborted(index: number): void
  /** Mark request `index` as no longer being worked on (without a complete response). */
  markStopped(index: number): void
  /** Stop recording. */
  detach(): void
}

interface Waiter {
  index: number
  resolve: (record: RequestRecord) => void
}

const records = new WeakMap<IncomingMessage, RequestRecord>()

/** The record of a request seen by a recorded server. */
export function recordOf(req: IncomingMessage): RequestRecord | undefined {
  return records.get(req)
}

/**
 * Record every request `server` receives: when it started, when the response
 * finished, when the client went away and whether the server was still working
 * then. Works on any `http.Server` (an Express app's, too).
 */
export function recordRequests(server: Server): RequestLog {
  const list: RequestRecord[] = []
  const stopped = new Set<number>()
  const arrivals: Waiter[] = []
  const departures: Waiter[] = []

  const flush = (waiters: Waiter[], ready: (r: RequestRecord) => boolean) => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const waiter = waiters[i]!
      const record = list[waiter.index]
      if (record && ready(record)) {
        waiters.splice(i, 1)
        waiter.resolve(record)
      }
    }
  }
  const gone = (r: RequestRecord) => r.clientGoneAt !== undefined

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const record: RequestRecord = {
      index: list.length,
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: { ...req.headers },
      startedAt: performance.now(),
      finishedAt: undefined,
      clientGoneAt: undefined,
      workingWhenClientLeft: undefined,
      serverAborted: false,
    }
    list.push(record)
    records.set(req, record)
    res.once('finish', () => {
      record.finishedAt = performance.now()
    })
    res.once('close', () => {
      if (res.writableFinished || record.serverAborted) return
      record.clientGoneAt = performance.now()
      record.workingWhenClientLeft = !stopped.has(record.index)
      flush(departures, gone)
    })
    flush(arrivals, () => true)
  }
  // First in line: recorded after an app's own listener (`recordRequests`
  // called after `app.listen()`), `recordOf(req)` was undefined inside the
  // app's handler, which runs before the record existed.
  server.prependListener('request', onRequest)

  return {
    records: list,
    request(index = 0) {
      const record = list[index]
      if (record) return Promise.resolve(record)
      return new Promise((resolve) => arrivals.push({ index, resolve }))
    },
    clientGone(index = 0) {
      const record = list[index]
      if (record && gone(record)) return Promise.resolve(record)
      return new Promise((resolve) => departures.push({ index, resolve }))
    },
    markServerAborted(index) {
      const record = list[index]
      if (record) record.serverAborted = true
    },
    markStopped(index) {
      stopped.add(index)
    },
    detach() {
      server.off('request', onRequest)
    },
  }
}
