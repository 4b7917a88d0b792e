import diagnostics from 'node:diagnostics_channel'
import {
  type CallOptions,
  type Client,
  credentials,
  type Interceptor,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServerInterceptor,
  type ServiceError,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js'

const serialize = (value: unknown): Buffer => Buffer.from(JSON.stringify(value ?? null))
const deserialize = (bytes: Buffer): unknown => JSON.parse(bytes.toString('utf8'))

const method = (name: string, requestStream: boolean, responseStream: boolean) => ({
  path: `/hourglass.test.Work/${name}`,
  requestStream,
  responseStream,
  requestSerialize: serialize,
  requestDeserialize: deserialize,
  responseSerialize: serialize,
  responseDeserialize: deserialize,
})

/** A service of each kind of method, JSON on the wire (no .proto needed). */
export const workService = {
  unary: method('Unary', false, false),
  serverStream: method('ServerStream', false, true),
  clientStream: method('ClientStream', true, false),
  bidi: method('Bidi', true, true),
}

const WorkClient = makeGenericClientConstructor(workService, 'Work')

export interface WorkClientApi extends Client {
  unary(
    request: unknown,
    metadata: Metadata,
    options: CallOptions,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): import('@grpc/grpc-js').ClientUnaryCall
  serverStream(
    request: unknown,
    metadata: Metadata,
    options: CallOptions,
  ): import('@grpc/grpc-js').ClientReadableStream<unknown>
  clientStream(
    metadata: Metadata,
    options: CallOptions,
    callback: (error: ServiceError | null, value?: unknown) => void,
  ): import('@grpc/grpc-js').ClientWritableStream<unknown>
  bidi(
    metadata: Metadata,
    options: CallOptions,
  ): import('@grpc/grpc-js').ClientDuplexStream<unknown, unknown>
}

export interface RunningServer {
  address: string
  server: Server
  close(): Promise<void>
}

/** A real grpc-js server on 127.0.0.1, port 0, insecure HTTP/2. */
export async function startServer(
  implementation: Partial<Record<keyof typeof workService, unknown>>,
  interceptors: ServerInterceptor[] = [],
): Promise<RunningServer> {
  const server = new Server({ interceptors })
  server.addService(workService, implementation as UntypedServiceImplementation)
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  )
  return {
    address: `127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown()
        resolve()
      }),
  }
}

export function connect(address: string, interceptors: Interceptor[] = []): WorkClientApi {
  return new WorkClient(address, credentials.createInsecure(), {
    interceptors,
    // Its own connections: grpc-js shares subchannels by address across
    // clients, and a port the OS hands out again after a test's server
    // closed could meet that closed server's subchannel in backoff (a call
    // failed in a few ms, UNAVAILABLE, once in a full run).
    'grpc.use_local_subchannel_pool': 1,
  }) as unknown as WorkClientApi
}

export interface UnaryResult {
  value?: unknown
  error?: ServiceError
}

/** A unary call as a promise that never rejects: the error is part of what the caller observes. */
export function unary(
  client: WorkClientApi,
  request: unknown,
  options: CallOptions = {},
  metadata: Metadata = new Metadata(),
): Promise<UnaryResult> {
  return new Promise((resolve) => {
    client.unary(request, metadata, options, (error, value) =>
      resolve(error ? { error } : { value }),
    )
  })
}

export interface Recording<T> {
  messages: T[]
  /** Resolves once `count` messages have been published. */
  count(count: number): Promise<void>
  stop(): void
}

/** Collect every message published on a diagnostics channel until `stop()`. */
export function record<T>(channel: { name: string }): Recording<T> {
  const messages: T[] = []
  const waiting: Array<{ count: number; resolve: () => void }> = []
  const listener = (message: unknown) => {
    messages.push(message as T)
    for (const w of waiting.filter((w) => messages.length >= w.count)) {
      waiting.splice(waiting.indexOf(w), 1)
      w.resolve()
    }
  }
  diagnostics.subscribe(channel.name, listener)
  return {
    messages,
    count: (count) =>
      messages.length >= count
        ? Promise.resolve()
        : new Promise((resolve) => waiting.push({ count, resolve })),
    stop: () => diagnostics.unsubscribe(channel.name, listener),
  }
}

/** `Promise.withResolvers` for Node 20. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => {}
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

export interface RawAnswer {
  /** grpc-status, from the headers of a trailers-only answer or from the trailers. */
  status: number
  message: string | undefined
}

/**
 * One unary call sent with node:http2 directly — a caller that is not grpc-js
 * (another language, a proxy): it sends `grpc-timeout` but runs no timer of its own.
 */
export async function rawUnary(
  address: string,
  path: string,
  headers: Record<string, string>,
): Promise<RawAnswer> {
  const http2 = await import('node:http2')
  const session = http2.connect(`http://${address}`)
  try {
    const request = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    })
    const body = serialize({})
    const frame = Buffer.alloc(5 + body.length)
    frame.writeUInt32BE(body.length, 1)
    body.copy(frame, 5)
    request.end(frame)
    request.resume()
    return await new Promise<RawAnswer>((resolve, reject) => {
      const settle = (fields: Record<string, unknown>) => {
        if (fields['grpc-status'] === undefined) return
        resolve({
          status: Number(fields['grpc-status']),
          message:
            fields['grpc-message'] === undefined
              ? undefined
              : decodeURIComponent(String(fields['grpc-message'])),
        })
      }
      request.on('response', settle)
      request.on('trailers', settle)
      request.on('error', reject)
    })
  } finally {
    session.close()
  }
}

/** What a plain grpc-js server (no Hourglass) sees of a call. */
export interface Arrival {
  /** ms left on the call's gRPC deadline (its grpc-timeout) when it arrived; Infinity: none. */
  grpcMs: number
  header: string | undefined
}

/** The deadline and `x-deadline-remaining-ms` a server call arrived with. */
export function arrival(call: {
  getDeadline(): import('@grpc/grpc-js').Deadline
  metadata: import('@grpc/grpc-js').Metadata
}): Arrival {
  const at = call.getDeadline()
  const ms = at instanceof Date ? at.getTime() : at
  const header = call.metadata.get('x-deadline-remaining-ms')[0]
  return {
    grpcMs: Number.isFinite(ms) ? ms - Date.now() : ms,
    header: header === undefined ? undefined : String(header),
  }
}
