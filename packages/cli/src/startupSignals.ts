/**
 * SIGINT, SIGTERM and SIGHUP held from the first line of the `hourglass` binary
 * until the command knows what a stop means for it. Before, a signal in the
 * first moments of start-up (the gateway's or the demo's modules loading:
 * 0.7 s and more on a busy machine) met no handler and killed the process —
 * 143, no log line — where the same signal a moment later drained and
 * exited 0. The command releases the hold where it listens itself (the
 * gateway just before `startGateway`, which holds its own; `demo --serve`
 * once its chains are up), or at once (probe, a demo run: a signal ends
 * them, as it always did).
 *
 * Like @hourglass/gateway's holdSignals: the first signal is held, a second
 * is not (its default action ends the process at once), and a held one is
 * delivered again on release. A held signal also aborts
 * `startupStopSignal()`: a command's own start-up I/O (the gateway's config
 * read, its host lookup) may wait for good — a FIFO nobody writes, a hung
 * resolver — and a signal only recorded meanwhile stopped nothing. Imported
 * by nothing heavy, so the binary can hold before it loads anything else.
 */
// SIGHUP too: the gateway drains on it (a terminal closed, a process
// manager's HUP); probe and a demo run, released at once, still end by it.
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

let held: NodeJS.Signals | undefined
let binary = false
let stopping = new AbortController()

const onSignal = (signal: NodeJS.Signals) => {
  held = signal
  stopHolding()
  stopping.abort(signal)
}

function stopHolding(): void {
  for (const name of STOP_SIGNALS) process.off(name, onSignal)
}

/** Start holding (the binary only: `main()` in a caller's process holds nothing). */
export function holdStartupSignals(): void {
  binary = true
  stopHolding()
  if (stopping.signal.aborted) stopping = new AbortController()
  // A new run of the binary's path (a test runs it again in one process):
  // the last run's hang-up is not this one's way to end.
  endingSignal = undefined
  for (const name of STOP_SIGNALS) process.on(name, onSignal)
}

/**
 * Undoes `holdStartupSignals` for good: the process is no longer the
 * binary, nothing is held, no signal to end by. For tests that run the
 * binary's path in a process other files share (the binary never calls it).
 */
export function forgetStartupSignals(): void {
  stopHolding()
  binary = false
  held = undefined
  endingSignal = undefined
  stopping = new AbortController()
}

/**
 * Whether this process is the `hourglass` binary (it held from its first
 * line): only then may a command decide what a signal does to the process.
 * `main()` called in a caller's process leaves its signals alone.
 */
export function isHourglassBinary(): boolean {
  return binary
}

/**
 * Aborts when a stop signal is held (its `reason`: the signal's name): what
 * the command waits for while it starts can stop waiting. Never aborts in a
 * caller's process (`main()` as a library holds nothing), nor after the
 * hold is released: the command's own handlers take a signal from then on.
 */
export function startupStopSignal(): AbortSignal {
  return stopping.signal
}

/** The stop signal held so far, else undefined. */
export function heldStartupSignal(): NodeJS.Signals | undefined {
  return held
}

/**
 * Resolves once the event loop has polled for I/O after this call: a stop
 * signal the process has caught but not yet delivered to JavaScript has by
 * then reached the listeners installed now. libuv catches a signal at once,
 * queues it in the loop's signal pipe and delivers it at the loop's next
 * poll (after that poll's other I/O callbacks). The binary can run a long
 * time without one: modules loading (on Node 22 and later, with module
 * hooks registered, the main thread waits for the hooks thread without
 * polling for the whole import), any synchronous stretch. Until then, a
 * stop signal's last listener removed drops it (no default action either:
 * it was caught), and `process.exit` forgets it: a SIGHUP caught while the
 * probe loaded was gone when probe released the hold, and a SIGTERM caught
 * while it loaded @hourglass/fetch never reached its handler before it
 * exited 1. Awaited before the hold is handed over and before the binary
 * exits. Two turns: called from an I/O callback, the next check phase comes
 * before the next poll. At once in a caller's process (nothing is held).
 */
export async function caughtSignalsDelivered(): Promise<void> {
  if (!binary) return
  await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)))
}

/**
 * Stops holding. A signal held meanwhile is delivered again after the
 * caller's pending microtasks, to the handlers it has installed by then
 * (none: its default action, as if it had just arrived) — unless
 * `redeliver` is false: the command has ended by itself, and its exit code
 * stands. Await `caughtSignalsDelivered()` first: a signal caught but not
 * yet delivered is dropped when its last listener goes.
 */
export function releaseStartupSignals({ redeliver = true } = {}): void {
  stopHolding()
  const signal = held
  held = undefined
  if (signal === undefined || !redeliver) return
  // The check phase runs after every pending microtask: the caller's
  // continuation, and the handlers it installs, come first.
  setImmediate(() => {
    if (process.listenerCount(signal) > 0) process.emit(signal, signal)
    else process.kill(process.pid, signal)
  })
}

let endingSignal: NodeJS.Signals | undefined

/**
 * A command stopped by a hang-up asks the binary to end by that signal once
 * its output is flushed, rather than by `process.exit`: a terminal closed
 * under it has hung up, and Node 20's exit, resetting that tty, failed an
 * assertion and died by SIGSEGV (nodejs/node#51519). Ended by the signal's
 * default action, nothing resets the tty, and a shell reports 129.
 */
export function endBySignal(signal: NodeJS.Signals): void {
  endingSignal = signal
}

/** The signal `endBySignal` asked for, else undefined. */
export function signalToEndBy(): NodeJS.Signals | undefined {
  return endingSignal
}
