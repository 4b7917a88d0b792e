import type { ServerResponse } from 'node:http'

/**
 * `x-hourglass-provider: <name>` on a non-streamed answer, written after the
 * provider answered (and billed). Config validation admits only token-like
 * names; should one get past it anyway, the header is left out rather than
 * thrown on (`ERR_INVALID_CHAR`): a 500 for a paid answer, which SDKs retry
 * and the provider bills again. A try, not a check: nothing on the success path.
 */
export function setProviderHeader(res: ServerResponse, provider: string): void {
  try {
    res.setHeader('x-hourglass-provider', provider)
  } catch {
    // Not a valid header value: the answer goes without it.
  }
}
