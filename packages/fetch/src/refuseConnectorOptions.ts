import { optionError } from '@hourglass/core'
import type { ConnectorOptions } from './createConnector.js'

/**
 * The options only `createFetch`'s own Agent reads — its connector's — are
 * refused beside a `dispatcher` of the caller's, which connects through its
 * own: taken, they were dropped without a word, and a `ProxyAgent` given
 * `tls: { ca }` failed on the certificate the caller thought trusted, a
 * `lookup` (a service registry, a pinned address) was never asked. The
 * phase limits (`dnsTimeoutMs`, `connectTimeoutMs`) are not among them:
 * they have defaults, and the README says a dispatcher's connector keeps its
 * own.
 */
export function refuseConnectorOptions(options: ConnectorOptions): void {
  for (const name of CONNECTOR_ONLY) {
    const value = options[name]
    // null is autoSelectFamily*'s default, as for every option that has
    // one (a `tls: null` is refused as no object, with a dispatcher or not).
    if (value === undefined || (value === null && name !== 'tls')) continue
    // A TypeError whatever the value: one too many, not one out of range.
    const rule = `left out with a dispatcher of yours, which connects through its own connector: set it there (new Agent({ connect: createConnector({ ${name} }) }), or undici's own connect options)`
    throw new TypeError(optionError(name, rule, value).message)
  }
}

const CONNECTOR_ONLY = [
  'tls',
  'lookup',
  'autoSelectFamily',
  'autoSelectFamilyAttemptTimeoutMs',
] as const
