// Module hooks for a child `hourglass` (node --import, see signalDuringStartup.test.ts):
// the child signals itself as it starts loading the module named — a moment of
// start-up fixed by an event, not a delay. Registered with `data: { at, signal }`.
let at
let signal

export function initialize(data) {
  at = data.at
  signal = data.signal
}

export async function resolve(specifier, context, next) {
  if (at !== undefined && specifier.endsWith(at)) {
    at = undefined
    process.kill(process.pid, signal)
  }
  return next(specifier, context)
}
