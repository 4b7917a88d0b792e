import { Readable } from 'node:stream'

/** A stream request body the call reads through, and stops reading when it ends. */
export interface StoppableBody {
  /** What undici's fetch is given in place of the caller's body. */
  readonly body: ReadableStream<unknown> | AsyncIterable<unknown>
  /**
   * The call ended: stop reading the caller's body and cancel it with
   * `reason`. `cut`, when given, runs if the body is read after that (the
   * upload was not over): the end undici then writes would read as the
   * body's, so the request is reset first (`Attempt.cutUpload`).
   */
  stop(reason: unknown, cut?: () => void): void
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined }

/**
 * A `ReadableStream` or async-iterable request body behind a reader we can
 * stop. undici's fetch reads an upload in a loop that, once the fetch is
 * aborted or has failed, goes on reading the body to its end and drops each
 * chunk (its per-chunk "if terminated, abort these steps" skips the send,
 * not the read): after the deadline, the caller's signal or a reset
 * connection ended the call, the caller's stream was still pulled — a file
 * read to its end, an endless stream forever. The fetch spec's abort step
 * cancels the request's body with the error; through this one, `stop`
 * cancels the caller's body (its `cancel(reason)`, an iterator's `return()`,
 * so a Node stream is destroyed) and undici's loop sees the end at its next
 * read.
 *
 * Anything else — an in-memory body, or a stream undici refuses as it is
 * (locked or already read: its "disturbed or locked" TypeError) — is left
 * as it is (undefined). Nothing is read or locked before undici asks for the
 * first chunk: a call refused before it is sent leaves the caller's stream
 * untouched.
 */
export function stoppableBody(body: unknown): StoppableBody | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  if ('getReader' in body && typeof body.getReader === 'function') {
    const stream = body as ReadableStream<unknown>
    if (stream.locked || isDisturbed(stream)) return undefined
    return new StoppableStream(stream)
  }
  if (Symbol.asyncIterator in body) {
    const iterable = body as AsyncIterable<unknown> & { locked?: unknown }
    // undici refuses these too (a Node stream already read from).
    if (iterable.locked === true || isDisturbed(iterable)) return undefined
    return new StoppableIterable(iterable)
  }
  return undefined
}

/** A web stream: a stream of ours that reads the caller's through one reader, made on the first pull. */
class StoppableStream implements StoppableBody {
  readonly body: ReadableStream<unknown>
  readonly #source: ReadableStream<unknown>
  #reader: ReadableStreamDefaultReader<unknown> | undefined
  #stopped = false
  #cut: (() => void) | undefined

  constructor(source: ReadableStream<unknown>) {
    this.#source = source
    this.body = new ReadableStream<unknown>(
      {
        pull: (controller) => {
          if (this.#stopped) {
            this.#cutShort()
            controller.close()
            return
          }
          this.#reader ??= this.#source.getReader()
          return this.#reader.read().then(({ done, value }) => {
            if (done || this.#stopped) {
              if (this.#stopped) this.#cutShort()
              try {
                controller.close()
              } catch {
                // undici cancelled ours (that is what stopped it): closed already.
              }
              return
            }
            controller.enqueue(value)
          })
        },
        // undici cancels ours (a redirect it will not follow): the caller's goes with it.
        cancel: (reason) => this.stop(reason),
      },
      // Read nothing ahead of undici: a chunk is pulled from the caller only when undici wants one.
      { highWaterMark: 0 },
    )
  }

  stop(reason: unknown, cut?: () => void): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#cut = cut
    // A read in progress ends at once (done) with the cancel. A caller's
    // cancel that throws or rejects is its own affair: the call is over.
    const cancelled = this.#reader
      ? this.#reader.cancel(reason)
      : this.#source.locked
        ? undefined
        : this.#source.cancel(reason)
    cancelled?.catch(noop)
  }

  /** Read after the stop: the upload ends short of the caller's body. */
  #cutShort(): void {
    const cut = this.#cut
    this.#cut = undefined
    cut?.()
  }
}

/**
 * An async iterable (a Node stream, a generator): an iterable of ours over
 * the caller's iterator, done once stopped. undici turns it into a stream
 * as it would the caller's, chunk conversion included.
 */
class StoppableIterable implements StoppableBody, AsyncIterable<unknown> {
  readonly body: AsyncIterable<unknown> = this
  readonly #source: AsyncIterable<unknown>
  #iterator: AsyncIterator<unknown> | undefined
  #stopped = false
  #cut: (() => void) | undefined

  constructor(source: AsyncIterable<unknown>) {
    this.#source = source
  }

  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    return {
      next: () => {
        if (this.#stopped) return Promise.resolve(this.#cutShort())
        this.#iterator ??= this.#source[Symbol.asyncIterator]()
        return Promise.resolve(this.#iterator.next()).then(
          // Anything once stopped (a Node stream destroyed: done; a chunk
          // that came late) is the cut, not the upload's end: no chunk goes
          // out after the call ended.
          (result) => (this.#stopped ? this.#cutShort() : result),
          // A read under way when the call ended ends as done, whatever
          // becomes of the caller's body: a dropped server request destroyed
          // once its client left failed it (premature close), and undici's
          // fetch, failing its upload, failed the answer still being read
          // ("terminated").
          (error: unknown) => {
            if (this.#stopped) return this.#cutShort()
            throw error
          },
        )
      },
      return: (value?: unknown) => {
        this.stop(undefined)
        return Promise.resolve({ done: true, value })
      },
    }
  }

  stop(_reason: unknown, cut?: () => void): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#cut = cut
    const source = this.#source as unknown as NodeStreamLike
    const nodeStream =
      typeof source.pipe === 'function' &&
      typeof source.on === 'function' &&
      typeof source.destroy === 'function'
    // A server's request (a proxy's `body: req`) is not ours to end: its
    // client is still there, and its keep-alive connection carries the
    // client's next request once this body is over. Destroyed once part of
    // it was read (its iterator's return(), which detaches the socket
    // first), the rest of an upload the upstream answered early (a 413)
    // was pushed into a destroyed request Node no longer drops: it stopped
    // reading the socket for good, and the client's next request on that
    // connection was never answered. (One never read was destroyed too,
    // read as cut short, `aborted`, its client still there.) What is left
    // is dropped as Node drops a body nobody reads. An http2 server's
    // request likewise: destroyed, on Node 20, its HTTP/2 stream stayed
    // paused and the client's upload never finished. A core-API HTTP/2
    // stream (`server.on('stream')`) too: destroyed, its handler's
    // respond() threw ERR_HTTP2_INVALID_STREAM (no 502 for the client).
    if (
      nodeStream &&
      (isServerRequest(source) || isHttp2ServerRequest(source) || isHttp2ServerStream(source))
    ) {
      dropRest(source)
      return
    }
    // return() ends a generator and destroys a Node stream (its iterator's
    // return); one never started is ended the same way — but a Node
    // stream's iterator is an async generator that destroys the stream in
    // its `finally`, which a return() before its first next() never runs:
    // a file stream undici never read (a refused connect, a signal already
    // aborted) kept its descriptor open. That one is destroyed as its
    // iterator's return() destroys it: with no error (an 'error' event
    // nobody listens to would crash the process).
    if (this.#iterator === undefined && nodeStream) {
      source.destroy()
      return
    }
    try {
      const iterator = this.#iterator ?? this.#source[Symbol.asyncIterator]()
      Promise.resolve(iterator.return?.()).catch(noop)
    } catch {
      // An iterator whose return throws: nothing more we can stop.
    }
  }

  /** Read after the stop: the upload ends short of the caller's body. */
  #cutShort(): IteratorReturnResult<undefined> {
    const cut = this.#cut
    this.#cut = undefined
    cut?.()
    return DONE
  }
}

const noop = (): void => {}

type NodeStreamLike = {
  pipe?: unknown
  on: (event: string, listener: () => void) => unknown
  destroy: () => void
  read: () => unknown
  resume: () => void
  destroyed?: boolean
  readableEnded?: boolean
  _consuming?: unknown
  _dump?: unknown
  complete?: boolean
  socket?: {
    destroyed?: boolean
    once: (event: 'close', listener: () => void) => unknown
    off: (event: 'close', listener: () => void) => unknown
  } | null
}

/**
 * The rest of a server's request read and dropped, as Node drops a body
 * nobody reads (`_dump`, at its response's end): the parser pushes no more
 * of it, and the socket reads on to the connection's next request. What
 * was pushed already is read out too: a full buffer would hold the socket
 * stopped (Node resumes it only as the request is read). A read of ours
 * still waiting for a chunk ends when the body does.
 *
 * What comes after is read out as it comes: `_dump` resumes the stream,
 * but an iterator's 'readable' listener keeps it out of flowing, so once
 * undici had stopped asking for chunks (waiting on its socket, not inside
 * the iterator) nothing read the end the parser pushed last: the request
 * never emitted 'end' or 'close', and `finished(req)` never settled.
 */
function dropRest(req: NodeStreamLike): void {
  if (req.destroyed === true || req.readableEnded === true) return
  // An http2 request or stream has no `_dump`: read out, it is resumed and
  // its flow-control window reopened for the rest of the upload.
  if (typeof req._dump === 'function') req._dump()
  else req.resume()
  const readOut = (): void => {
    while (req.read() !== null) {
      // dropped
    }
  }
  req.on('readable', readOut)
  readOut()
  if (typeof req._dump === 'function') abortOnSocketClose(req)
}

/**
 * A server's HTTP/1 request whose client leaves (or has left) before the
 * rest of its body came, destroyed as Node destroys one it still waits to
 * answer (`'aborted'`, `'close'`, `finished(req)` rejects). Node's own
 * abort reaches only requests not yet answered: once the response had
 * finished, a dropped request whose connection closed mid-upload emitted
 * neither, `finished(req)` never settled, and a handler's cleanup tied to
 * it never ran (when the call's end destroyed it, it did). The listener
 * goes with the request, so a keep-alive connection's socket does not
 * gather one per request.
 */
function abortOnSocketClose(req: NodeStreamLike): void {
  const { socket } = req
  if (socket == null) return
  const abort = (): void => {
    if (req.complete !== true && req.destroyed !== true) req.destroy()
  }
  if (socket.destroyed === true) {
    abort()
    return
  }
  socket.once('close', abort)
  req.on('close', () => socket.off('close', abort))
}

/**
 * An `http.IncomingMessage` a server received (node:stream's own test, in
 * its internal utils, which its stream cleanup reads: a client's response
 * has the same fields and a `req` that went through an upgrade or CONNECT).
 */
function isServerRequest(stream: NodeStreamLike): boolean {
  return (
    typeof stream._consuming === 'boolean' &&
    typeof stream._dump === 'function' &&
    (stream as { req?: { upgradeOrConnect?: unknown } }).req?.upgradeOrConnect === undefined
  )
}

/**
 * An http2 server's compatibility request (`Http2ServerRequest`, an
 * `http2.createServer` handler's `req`): its `stream` is the server's
 * HTTP/2 stream, the only kind with `respond`.
 */
function isHttp2ServerRequest(stream: NodeStreamLike): boolean {
  return typeof (stream as { stream?: { respond?: unknown } }).stream?.respond === 'function'
}

/**
 * A core-API HTTP/2 server stream (`ServerHttp2Stream`, a `server.on('stream')`
 * handler's `stream`): its readable side is the request, its writable side
 * the answer still to come. Only a server's stream has `respond` and `pushStream`.
 */
function isHttp2ServerStream(stream: NodeStreamLike): boolean {
  const s = stream as { respond?: unknown; pushStream?: unknown }
  return typeof s.respond === 'function' && typeof s.pushStream === 'function'
}

/** Read from already (node:stream's test, which undici's fetch applies to web streams and Node streams alike). */
function isDisturbed(body: unknown): boolean {
  return Readable.isDisturbed(body as Readable)
}
