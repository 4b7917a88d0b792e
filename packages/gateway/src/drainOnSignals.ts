/**
 * The signals a supervisor or an operator stops a gateway with; held while it
 * starts, drained on after. SIGHUP too: a terminal closed under it, or a
 * process manager that stops with HUP, killed it at once, cutting every
 * request in flight. A hang-up is taken as a stop (as nginx's workers and
 * most servers that do not reload take it), not as a reload: the gateway
 * reads its config once.
 */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/** Every gateway's own signal listeners, in this process: none is a handler of the process's own. */
const gatewayListeners = new WeakSet<object>()

/** Drains a signal began that have not ended yet, across the gateways of this process. */
let drainsUnderway = 0

/**
 * `startGateway`'s default: the first SIGINT, SIGTERM or SIGHUP drains the gateway
 * (`close()`: requests in flight get `drainTimeoutMs`, one log line says how
 * it went), then the signal does what it would have done without us — it is
 * raised again, and with no other listener its default action ends the
 * process. A gateway that a supervisor stops on every deploy must not cut
 * the requests it is serving, and a user who copied the two-line standalone
 * start never wrote a handler.
 *
 * A second one during the drain (Ctrl-C again, a supervisor that signals
 * twice) ends the process at once, without waiting out the drain: `forced`
 * writes the shutdown record first (the drain's own line never comes), then
 * the signal is raised with no listener of ours left. A process that listens for the
 * signal itself keeps it: we drain, and do not raise it again — except a
 * SIGHUP it handles, which is its own (a reload) and drains nothing. Returns the
 * release, which `close()` calls: a gateway closed by its owner leaves no
 * listener behind.
 */
export function drainOnSignals(
  close: () => Promise<unknown>,
  forced: (signal: NodeJS.Signals, first: NodeJS.Signals) => void = () => {},
): () => void {
  const release = () => {
    for (const name of STOP_SIGNALS) process.off(name, onSignal)
  }
  const onSignal = (signal: NodeJS.Signals) => {
    // Counted as the signal arrives, ours first (prepended): a handler added
    // with `process.once`, before us or after, has removed itself by the
    // time the drain ends — and by the time a listener after it runs — and
    // the process's own shutdown (which may still be closing a database)
    // must not be killed by a re-raise then.
    // Another gateway's listener (two standalone gateways in one process)
    // is not the process's own handler: each counted the other's, so a
    // SIGTERM drained both and ended nothing, and a SIGHUP drained neither.
    const handledElsewhere = process.listeners(signal).some((l) => !gatewayListeners.has(l))
    // A hang-up means what the process says it means (often: reload its
    // config, reopen its logs); only where it would have ended the process
    // is it a stop, drained.
    if (signal === 'SIGHUP' && handledElsewhere) return
    // The drain (and with it our listeners' release: `drain` lets go of
    // them first) starts once this signal's other listeners have run: one that
    // ends the process when it is the last listener left (signal-exit, which
    // execa, ora and write-file-atomic load) would otherwise see itself
    // alone and kill the process before the drain.
    drainsUnderway++
    queueMicrotask(() => drain(signal, handledElsewhere))
  }
  const drain = (signal: NodeJS.Signals, handledElsewhere: boolean) => {
    release()
    // A terminal closed sends its hang-up twice (the kernel to the
    // foreground group, the shell to its jobs): the second is the same
    // hang-up, and must not end the drain it started.
    const sameHangUp = () => {}
    gatewayListeners.add(sameHangUp)
    if (signal === 'SIGHUP') process.on('SIGHUP', sameHangUp)
    // A second stop signal during the drain. With no listener at all, Node's
    // default ended the process with no line: a shutdown that began and
    // never said how it ended. Ours runs first (prepended) and goes at once:
    // a listener of the process's own still runs, in this same emit, and
    // one that ends the process when it is the last left (signal-exit)
    // sees itself alone, as it did.
    const again = signal === 'SIGHUP' ? STOP_SIGNALS.filter((s) => s !== 'SIGHUP') : STOP_SIGNALS
    const stopListening = () => {
      for (const name of again) process.off(name, onAgain)
      process.off('SIGHUP', sameHangUp)
    }
    const onAgain = (second: NodeJS.Signals) => {
      stopListening()
      // The process handles it: its business (as without us), no line of ours.
      if (process.listeners(second).some((l) => !gatewayListeners.has(l))) return
      forced(second, signal)
      // Another gateway's listener, still there, says its line and raises it too.
      if (process.listenerCount(second) === 0) process.kill(process.pid, second)
    }
    gatewayListeners.add(onAgain)
    for (const name of again) process.prependListener(name, onAgain)
    void close()
      .catch(() => {})
      .finally(() => {
        stopListening()
        drainsUnderway--
        // Raised once, when the last gateway the signal drains is done:
        // raised at the first one's end, it ended the process while another
        // was still draining.
        if (!handledElsewhere && drainsUnderway === 0 && process.listenerCount(signal) === 0) {
          process.kill(process.pid, signal)
        }
      })
  }
  gatewayListeners.add(onSignal)
  for (const name of STOP_SIGNALS) process.prependListener(name, onSignal)
  return release
}
