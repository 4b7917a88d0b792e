/** A completed side effect, as kept by a store. */
export interface SideEffectRecord {
  /** What the side effect returned; keep it JSON-serialisable for stores outside the process. */
  value: unknown
  /** When it completed, epoch ms. */
  completedAtMs: number
}

/**
 * Where completed side effects are remembered. The in-memory default serves
 * one process; implement this over Redis or a database table to make "at
 * most once" hold across a fleet (the in-flight sharing of concurrent callers
 * stays per process; see `sideEffect`).
 */
export interface SideEffectStore {
  /** The record, or undefined when there is none (`null`, as a Redis GET answers, is read as none too). */
  get(key: string): SideEffectRecord | undefined | Promise<SideEffectRecord | undefined>
  /** Remember `record` under `key` for `ttlMs` ms (`Infinity` = for as long as the store lives). */
  set(key: string, record: SideEffectRecord, ttlMs: number): void | Promise<void>
}
