/** The signals a supervisor or an operator stops a gateway with; held while it starts, drained on after. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const

/**
 * `startGateway`'s default: the first SIGINT or SIGTERM drains the gateway
 * (`close()`: requests in flight get `drainTimeoutMs`, one log line says how
 * it went), then the signal does what it would have done without us — it is
 * raised again, and with no other listener its default action ends the
 * process. A gateway that a supervisor stops on every deploy must not cut
 * the requests it is serving, and a user who copied the two-line standalone
 * start never wrote a handler.
 *
 * Our listeners go at the first signal, so a second one (Ctrl-C again, a
 * supervisor that signals twice) meets Node's default and ends the process
 * at once, without waiting out the drain. A process that listens for the
 * signal itself keeps it: we drain, and do not raise it again. Returns the
 * release, which `close()` calls: a gateway closed by its owner leaves no
 * listener behind.
 */
export function drainOnSignals(close: () => Promise<unknown>): () => void {
  const release = () => {
    for (const name of STOP_SIGNALS) process.off(name, onSignal)
  }
  const onSignal = (signal: NodeJS.Signals) => {
    release()
    void close()
      .catch(() => {})
      .finally(() => {
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal)
      })
  }
  for (const name of STOP_SIGNALS) process.on(name, onSignal)
  return release
}
