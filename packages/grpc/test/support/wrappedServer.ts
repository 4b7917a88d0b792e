import { afterEach } from 'vitest'
import {
  deadlineErrors,
  deadlineServerInterceptor,
  type ServerDeadlineOptions,
} from '../../src/index.js'
import { connect, type RunningServer, startServer, type WorkClientApi } from './grpc.js'

/**
 * Registers an `afterEach` that closes what the returned `serve` opened, and
 * returns `serve`: it starts a server whose handlers are `implementation`
 * wrapped by `deadlineErrors`, behind `deadlineServerInterceptor(options)`,
 * and gives a client connected to it. Call it once, at a test file's top level.
 */
export function useWrappedServer(): (
  implementation: object,
  options?: ServerDeadlineOptions,
) => Promise<WorkClientApi> {
  let server: RunningServer | undefined
  let client: WorkClientApi | undefined

  afterEach(async () => {
    client?.close()
    client = undefined
    await server?.close()
    server = undefined
  })

  return async function serve(
    implementation: object,
    options?: ServerDeadlineOptions,
  ): Promise<WorkClientApi> {
    server = await startServer(deadlineErrors(implementation), [deadlineServerInterceptor(options)])
    client = connect(server.address)
    return client
  }
}
