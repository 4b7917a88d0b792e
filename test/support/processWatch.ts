/**
 * Everything a run must never produce, caught at the process: unhandled
 * rejections, uncaught exceptions, warnings (MaxListenersExceededWarning
 * first of all) and "headers already sent" errors reported by the apps.
 */
export interface ProcessWatch {
  readonly unhandledRejections: unknown[]
  readonly uncaughtExceptions: unknown[]
  readonly warnings: Error[]
  /** Errors that reached an app's last error handler (pushed by the apps). */
  readonly appErrors: unknown[]
  /** Every problem above, as short strings for an assertion message. */
  problems(): string[]
  stop(): void
}

export function watchProcess(): ProcessWatch {
  const watch = {
    unhandledRejections: [] as unknown[],
    uncaughtExceptions: [] as unknown[],
    warnings: [] as Error[],
    appErrors: [] as unknown[],
    problems(): string[] {
      const show = (e: unknown) =>
        e instanceof Error ? `${e.name}: ${e.message}` : `non-error: ${String(e)}`
      return [
        ...watch.unhandledRejections.map((e) => `unhandledRejection ${show(e)}`),
        ...watch.uncaughtExceptions.map((e) => `uncaughtException ${show(e)}`),
        ...watch.warnings.map((e) => `warning ${show(e)}`),
        ...watch.appErrors.map((e) => `app error ${show(e)}`),
      ]
    },
    stop(): void {
      process.off('unhandledRejection', onRejection)
      process.off('uncaughtExceptionMonitor', onException)
      process.off('warning', onWarning)
    },
  }
  const onRejection = (reason: unknown) => watch.unhandledRejections.push(reason)
  // The monitor sees an uncaught exception without changing what happens to it.
  const onException = (error: unknown) => watch.uncaughtExceptions.push(error)
  const onWarning = (warning: Error) => watch.warnings.push(warning)
  process.on('unhandledRejection', onRejection)
  process.on('uncaughtExceptionMonitor', onException)
  process.on('warning', onWarning)
  return watch
}

/** True for the error Node raises when a response is written twice. */
export function isHeadersSent(error: unknown): boolean {
  return (
    (error as { code?: unknown } | null)?.code === 'ERR_HTTP_HEADERS_SENT' ||
    (error instanceof Error && /headers already sent|after they are sent/i.test(error.message))
  )
}
