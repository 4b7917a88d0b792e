import type { ServerResponse } from 'node:http'
import { replaceOwn } from './replaceOwn.js'

type Writer = (...args: unknown[]) => unknown

/**
 * For a HEAD, while the app's `respond` writes the deadline's answer: the
 * body it writes is dropped, as Node drops it by default — and the headers
 * go out. On a server made with `rejectNonStandardBodyWrites` Node throws
 * instead, from the deadline's timer: the 504 went out, then the process
 * went down (the gateway's own `respond` writes `res.end(text)`). Returns
 * what puts the response's writers back as they were.
 */
export function dropHeadBody(res: ServerResponse): () => void {
  const write = Object.getOwnPropertyDescriptor(res, 'write')
  const end = Object.getOwnPropertyDescriptor(res, 'end')
  const realEnd = res.end as unknown as Writer
  // Defined, not assigned (a pinned writer is left as it is: replaceOwn).
  replaceOwn(res, 'write', (...args: unknown[]) => {
    // Node calls a dropped write's callback too: whoever waits on it is not left hanging.
    const callback = args.findLast((a) => typeof a === 'function') as (() => void) | undefined
    if (callback !== undefined) process.nextTick(callback)
    return true
  })
  replaceOwn(res, 'end', (...args: unknown[]) => {
    const callback = args.find((a) => typeof a === 'function')
    return callback === undefined ? realEnd.call(res) : realEnd.call(res, callback)
  })
  return () => {
    restore(res, 'write', write)
    restore(res, 'end', end)
  }
}

function restore(res: ServerResponse, name: 'write' | 'end', own: PropertyDescriptor | undefined) {
  try {
    if (own === undefined) delete (res as unknown as Record<string, unknown>)[name]
    else Object.defineProperty(res, name, own)
  } catch {
    // Pinned for good: never replaced.
  }
}
