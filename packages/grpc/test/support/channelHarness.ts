import {
  type ChannelOptions,
  credentials,
  makeGenericClientConstructor,
  type ServerInterceptor,
} from '@grpc/grpc-js'
import { Deadline } from '@hourglass/core'
import { afterEach } from 'vitest'
import { deadlineInterceptor } from '../../src/index.js'
import { type RunningServer, startServer, type WorkClientApi, workService } from './grpc.js'

const WorkClient = makeGenericClientConstructor(workService, 'Work')

export interface ChannelHarness {
  /** A real server (startServer), shut down after the test. */
  serve(
    implementation: Parameters<typeof startServer>[0],
    interceptors?: ServerInterceptor[],
  ): Promise<RunningServer>
  /** A client with deadlineInterceptor() and the channel options a user would set, closed after the test. */
  client(address: string, channelOptions?: ChannelOptions): WorkClientApi
  /** Anything else the test opened (a server bound by hand), closed after it with the clients. */
  closeAfter(close: () => void): void
}

/**
 * Servers and deadline-intercepted clients for the tests of one file: call it
 * at the top of the file. After each test the clients (and what closeAfter
 * was given) are closed first, then the servers.
 */
export function channelHarness(): ChannelHarness {
  const servers: RunningServer[] = []
  const closers: Array<() => void> = []
  afterEach(async () => {
    for (const close of closers.splice(0)) close()
    for (const server of servers.splice(0)) await server.close()
  })
  return {
    async serve(implementation, interceptors) {
      const server = await startServer(implementation, interceptors)
      servers.push(server)
      return server
    },
    client(address, channelOptions = {}) {
      const c = new WorkClient(address, credentials.createInsecure(), {
        ...channelOptions,
        interceptors: [deadlineInterceptor()],
      }) as unknown as WorkClientApi
      closers.push(() => c.close())
      return c
    },
    closeAfter(close) {
      closers.push(close)
    },
  }
}

/** Counts the `onDone` hooks taken on `deadline` and not yet released (it patches the deadline). */
export function countHooks(deadline: Deadline): () => number {
  let held = 0
  const onDone = deadline.onDone.bind(deadline)
  deadline.onDone = (listener) => {
    held++
    const off = onDone(listener)
    return () => {
      held--
      off()
    }
  }
  return () => held
}

/** A caller's deadline whose `onDone` hooks are counted: taken and released. */
export function countedDeadline(ms: number): { deadline: Deadline; held: () => number } {
  const deadline = Deadline.after(ms)
  return { deadline, held: countHooks(deadline) }
}
