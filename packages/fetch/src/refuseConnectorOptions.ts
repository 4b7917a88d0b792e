import { optionError } from '@hourglass/core'
import type { ConnectorOptions } from './createConnector.js'
import { isTakenByConnector } from './takenByConnector.js'

/**
 * `tls` and `lookup` beside a `dispatcher` of the caller's, which connects
 * through its own connector, are refused unless a `createConnector` of the
 * caller's took the very same value (one options object spread into both,
 * as the README's setup does: in force there). Otherwise they were dropped
 * without a word: a `ProxyAgent` given `tls: { ca }` failed on the
 * certificate the caller thought trusted, a `lookup` (a service registry, a
 * pinned address) was never asked. Values that cannot be told apart from a
 * copy — the phase limits, `autoSelectFamily*` — are not refused: they have
 * defaults, and the README says a dispatcher's connector keeps its own.
 */
export function refuseConnectorOptions(options: ConnectorOptions): void {
  for (const name of CONNECTOR_ONLY) {
    const value = options[name]
    // A `tls: null` is refused as no object, with a dispatcher or not.
    if (value === undefined || isTakenByConnector(value)) continue
    // A TypeError whatever the value: one too many, not one out of range.
    const rule = `left out with a dispatcher of yours, which connects through its own connector: set it there (new Agent({ connect: createConnector({ ${name} }) }), or undici's own connect options)`
    throw new TypeError(optionError(name, rule, value).message)
  }
}

const CONNECTOR_ONLY = ['tls', 'lookup'] as const
