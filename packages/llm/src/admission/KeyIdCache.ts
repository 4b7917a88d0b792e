import { keyId } from './keyId.js'

/**
 * Keys remembered at most. Each is a raw secret held in memory: a service
 * that takes its clients' own keys (bring-your-own-key) kept every key any
 * client ever sent for the life of the process.
 */
export const MAX_CACHED_KEY_IDS = 1000

/**
 * The ids (`keyId`) of the keys recently asked about, so a request does not
 * hash its provider's keys again on every attempt. Forgets them all when
 * full, as `endpointId` does: the next request hashes its keys once more.
 */
export class KeyIdCache {
  readonly #ids = new Map<string, string>()

  id(key: string | undefined): string {
    if (key === undefined) return keyId(undefined)
    let id = this.#ids.get(key)
    if (id === undefined) {
      id = keyId(key)
      if (this.#ids.size >= MAX_CACHED_KEY_IDS) this.#ids.clear()
      this.#ids.set(key, id)
    }
    return id
  }

  /** Keys held (for tests and diagnostics). */
  get size(): number {
    return this.#ids.size
  }
}
