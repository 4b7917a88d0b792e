import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent } from 'undici'
import { createConnector, createFetch, deadlineInterceptor } from '../../src/index.js'
import { useCleanup } from './useCleanup.js'

/**
 * What a test of the headers a call sends needs: a server that answers `ok`
 * and records each request, `createFetch`, and an Agent composed with the
 * interceptor — each closed after every test of the calling file.
 */
export function headerClients() {
  const { keep } = useCleanup()
  return {
    serve: async (): Promise<FaultServer> =>
      keep(await faultServer({ type: 'respond', body: 'ok' })),
    fetchClient: () => keep(createFetch()),
    interceptorAgent: () =>
      keep(new Agent({ connect: createConnector() })).compose(deadlineInterceptor()),
  }
}
