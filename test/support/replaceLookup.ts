import dnsPromises from 'node:dns/promises'
import { syncBuiltinESMExports } from 'node:module'
import { afterAll, beforeAll } from 'vitest'

/**
 * The resolver's answers for the tests of the calling file, without asking a
 * DNS server (none may be reachable where the tests run): `answer` gives the
 * lookup's result for the names a test knows, undefined for every other name,
 * which is looked up as usual. Not vi.mock: a file shares a worker with others
 * (`isolate: false`) that may have loaded the gateway with the real module
 * already; the builtin's own export is replaced, and its ESM binding synced
 * to it. Call it at the top of the file.
 */
export function replaceLookup(answer: (host: string) => Promise<unknown> | undefined): void {
  const realLookup = dnsPromises.lookup
  function lookup(host: string, ...rest: unknown[]): Promise<unknown> {
    return answer(host) ?? (realLookup as (...args: unknown[]) => Promise<unknown>)(host, ...rest)
  }
  beforeAll(() => {
    dnsPromises.lookup = lookup as typeof dnsPromises.lookup
    syncBuiltinESMExports()
  })
  afterAll(() => {
    dnsPromises.lookup = realLookup
    syncBuiltinESMExports()
  })
}

/** The error getaddrinfo fails with: `code` ENOTFOUND (no such name), EAI_AGAIN (resolver down), … */
export function lookupError(code: string, host: string): Error & { code: string } {
  return Object.assign(new Error(`getaddrinfo ${code} ${host}`), { code })
}
