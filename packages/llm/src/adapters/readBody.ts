import { headerValue } from '../dialects/errorHeaders.js'

/** What `readBody` reads: undici's response body (a Readable). */
export interface ReadableBody {
  on(event: 'data', listener: (chunk: Uint8Array) => void): unknown
  on(event: 'end' | 'close', listener: () => void): unknown
  on(event: 'error', listener: (error: unknown) => void): unknown
  off(event: 'data', listener: (chunk: Uint8Array) => void): unknown
  destroy(): unknown
}

export interface BodyText {
  /** The body as UTF-8 text (a leading BOM dropped), or its first `limitBytes` when it was longer. */
  text: string
  /** False when the body was longer than the limit: reading stopped, and the connection was closed. */
  complete: boolean
  /** Bytes received, the chunk that went past the limit included. */
  readBytes: number
}

/**
 * Reads a body as text, at most `limitBytes` of it. A longer body is not
 * read on: the rest would only be thrown away, at the cost of its memory
 * (a 300 MB body read whole took +369 MB RSS) and of a connection held for
 * as long as the sender likes. It is destroyed at once — undici aborts the
 * request, which closes its connection — and the text read so far comes
 * back with `complete: false`. A body that fails (a cut, the body timeout,
 * the caller's abort) rejects with what undici threw, as `body.text()` did.
 */
export function readBody(body: ReadableBody, limitBytes: number): Promise<BodyText> {
  return new Promise((resolve, reject) => {
    // As undici's `text()`: UTF-8, a BOM dropped, invalid bytes as U+FFFD.
    const decoder = new TextDecoder()
    let text = ''
    let readBytes = 0
    let settled = false
    const onData = (chunk: Uint8Array) => {
      if (settled) return
      const room = limitBytes - readBytes
      readBytes += chunk.byteLength
      if (chunk.byteLength <= room) {
        text += decoder.decode(chunk, { stream: true })
        return
      }
      settled = true
      if (room > 0) text += decoder.decode(chunk.subarray(0, room), { stream: true })
      text += decoder.decode()
      body.off('data', onData)
      // Destroying emits undici's RequestAbortedError: the `error` listener
      // below stays, so that it is not an unhandled 'error' event.
      body.destroy()
      resolve({ text, complete: false, readBytes })
    }
    body.on('data', onData)
    body.on('end', () => {
      if (settled) return
      settled = true
      resolve({ text: text + decoder.decode(), complete: true, readBytes })
    })
    body.on('error', (error) => {
      if (settled) return
      settled = true
      reject(error)
    })
    // undici ends a body with 'end' or 'error'; a close without either would
    // otherwise leave the attempt waiting for its deadline.
    body.on('close', () => {
      if (settled) return
      settled = true
      reject(new Error('the response body closed before its end'))
    })
  })
}

/** The body's `Content-Length`, when it announced a valid one. */
export function declaredLength(headers: Parameters<typeof headerValue>[0]): number | undefined {
  const value = headerValue(headers, 'content-length')?.trim()
  if (value === undefined || !/^\d{1,15}$/.test(value)) return undefined
  return Number(value)
}

/** Drops a body without reading it: its connection is closed rather than drained. */
export function discardBody(body: ReadableBody): void {
  // undici emits RequestAbortedError on the destroyed body: expected, not unhandled.
  body.on('error', () => {})
  body.destroy()
}
