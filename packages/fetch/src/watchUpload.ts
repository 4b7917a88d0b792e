import { channel } from 'node:diagnostics_channel'
import type { Http2Stream } from 'node:http2'
import type { Socket } from 'node:net'
import type { Attempt } from './Attempt.js'

// undici writes a request in one synchronous run (client-h1.js `writeH1`,
// client-h2.js `writeH2`): the handler's onConnect, then
// `undici:client:sendHeaders` with the socket, then the body — a Buffer, a
// string or bytes in one write, reported sent at once. The attempt whose
// onConnect ran last is the one that message is about. It is forgotten a
// microtask later, so a request that stopped before its headers were
// published (aborted in onConnect) cannot hand a later request's socket to it.
const sendHeaders = channel('undici:client:sendHeaders')

let writing: Attempt | undefined
let subscribed = false

/**
 * An HTTP/2 attempt whose stream is not made yet when its headers are
 * published: undici opens it right after, in the same run. `known` is every
 * stream the session had then; the one added since is the attempt's.
 */
interface StreamLookup {
  attempt: Attempt
  socket: Socket
  state: SessionStreams
  known: Set<Http2Stream>
}

let lookup: StreamLookup | undefined

/**
 * An attempt whose request has a body is about to be written (its handler's
 * onConnect): hand it what its upload goes out on — the socket, or over
 * HTTP/2 its stream and the session's socket — so its headers limit can see
 * the upload move (`Attempt.watchSocket`, `Attempt.watchStream`). Only for
 * a body: a request without one is written whole at once. Subscribed from
 * the first upload on and never left: a publish costs undici ~15 ns a
 * request, a subscribe and unsubscribe ~12 µs (Node 20); before any upload
 * undici publishes nothing.
 */
export function watchUpload(attempt: Attempt): void {
  if (!subscribed) {
    subscribed = true
    sendHeaders.subscribe(onSendHeaders)
  }
  writing = attempt
  queueMicrotask(() => {
    if (writing === attempt) writing = undefined
    if (lookup?.attempt === attempt) findStream()
    // A body held in memory was written in that synchronous run: where the
    // upload stands now is where it starts from.
    attempt.uploadWritten()
  })
}

function onSendHeaders(message: unknown): void {
  // undici's loop writes the next request only once the last one's stream
  // is made: a lookup still open finds its stream now, before the next one's.
  if (lookup !== undefined) findStream()
  const attempt = writing
  if (attempt === undefined) return
  writing = undefined
  const socket = (message as { socket?: unknown } | null)?.socket
  if (!isSocket(socket)) return
  if ((socket as { alpnProtocol?: unknown }).alpnProtocol !== 'h2') {
    attempt.watchSocket(socket)
    return
  }
  // An HTTP/2 session's socket carries every stream's frames: others moving
  // would keep a stalled stream's limit from firing. The stream tells
  // whether this upload still has bytes to send.
  const state = sessionStreams(socket)
  if (state === undefined) return
  lookup = { attempt, socket, state, known: new Set(streamsOf(state)) }
}

/** Hand the open lookup's attempt the one stream its session gained since its headers were published. */
function findStream(): void {
  const open = lookup
  lookup = undefined
  if (open === undefined) return
  let found: Http2Stream | undefined
  for (const stream of streamsOf(open.state)) {
    if (open.known.has(stream)) continue
    // More than one: another request's stream was made too, without a
    // publish of its own to tell them apart (undici's CONNECT and upgrade
    // publish none). Better no watch than another request's.
    if (found !== undefined) return
    found = stream
  }
  if (found !== undefined) open.attempt.watchStream(found, open.socket)
}

/**
 * The streams of the HTTP/2 session undici runs over `socket`, as Node keeps
 * them. Neither link is public: undici keeps the session on the socket
 * (`kHTTP2Session`, `Symbol('http2Session')`), Node keeps its streams in the
 * session's state (`kState`, `Symbol('state')`: `streams` by id,
 * `pendingStreams` until the session is ready). Found by their symbols'
 * names, so any copy of undici is read; where either is missing (another
 * runtime, another layout) there is no watch, and the limit counts from
 * the moment undici handed the body to the stream.
 */
function sessionStreams(socket: Socket): SessionStreams | undefined {
  const session = ownSymbol(socket, 'http2Session')
  if (session === undefined) return undefined
  const state = ownSymbol(session, 'state') as Partial<SessionStreams> | undefined
  // Node's own `SafeMap` and `SafeSet`: not `instanceof` Map and Set.
  if (typeof state?.streams?.values !== 'function') return undefined
  if (typeof state.pendingStreams?.values !== 'function') return undefined
  return state as SessionStreams
}

interface SessionStreams {
  streams: { values(): Iterable<Http2Stream> }
  pendingStreams: { values(): Iterable<Http2Stream> }
}

function* streamsOf(state: SessionStreams): Iterable<Http2Stream> {
  yield* state.streams.values()
  yield* state.pendingStreams.values()
}

function ownSymbol(target: object, name: string): object | undefined {
  for (const key of Object.getOwnPropertySymbols(target)) {
    if (key.description !== name) continue
    const value = (target as Record<symbol, unknown>)[key]
    return typeof value === 'object' && value !== null ? value : undefined
  }
  return undefined
}

function isSocket(socket: unknown): socket is Socket {
  if (typeof socket !== 'object' || socket === null) return false
  return typeof (socket as Socket).writableLength === 'number'
}
