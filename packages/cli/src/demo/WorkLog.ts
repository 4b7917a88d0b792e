/** One hop's work on one request: when its handler started and when it stopped. */
export interface HopWork {
  hop: string
  caseId: string
  startedAt: number
  /** `performance.now()` ms when the handler settled; undefined while it still runs. */
  endedAt: number | undefined
}

/**
 * Records, per service hop, when each request's handler started and when it
 * really stopped (its `finally`), which is what "work still running after
 * the client gave up" is measured from. Times are `performance.now()` ms.
 */
export class WorkLog {
  readonly entries: HopWork[] = []
  #running = 0
  #idleWaiters: (() => void)[] = []

  /** Wrap one handler's work: recorded from call to settle, errors passed through. */
  async track<T>(hop: string, caseId: string, work: () => Promise<T>): Promise<T> {
    const entry: HopWork = { hop, caseId, startedAt: performance.now(), endedAt: undefined }
    this.entries.push(entry)
    this.#running++
    try {
      return await work()
    } finally {
      entry.endedAt = performance.now()
      this.#running--
      if (this.#running === 0) for (const resolve of this.#idleWaiters.splice(0)) resolve()
    }
  }

  get running(): number {
    return this.#running
  }

  /** Resolves when no tracked work is running. */
  idle(): Promise<void> {
    if (this.#running === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idleWaiters.push(resolve))
  }

  /** The latest moment any hop worked on `caseId`; `now` for work still running. */
  lastWorkAt(caseId: string, now: number): { at: number; stillRunning: boolean } | undefined {
    let at: number | undefined
    let stillRunning = false
    for (const entry of this.entries) {
      if (entry.caseId !== caseId) continue
      if (entry.endedAt === undefined) stillRunning = true
      const end = entry.endedAt ?? now
      at = at === undefined ? end : Math.max(at, end)
    }
    return at === undefined ? undefined : { at, stillRunning }
  }
}
