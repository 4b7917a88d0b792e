import { until } from './until.js'

/**
 * What the process holds open, by kind (`TCPSocketWrap`, `Timeout`, …), and
 * how many listeners it has: taken before a run and compared after it.
 */
export interface ResourceSnapshot {
  resources: Record<string, number>
  processListeners: number
}

export function snapshot(): ResourceSnapshot {
  const resources: Record<string, number> = {}
  for (const kind of process.getActiveResourcesInfo()) resources[kind] = (resources[kind] ?? 0) + 1
  const processListeners = process
    .eventNames()
    .reduce((sum, name) => sum + process.listenerCount(name), 0)
  return { resources, processListeners }
}

/** Kinds that grew from `before` to `after` (`{ kind: [before, after] }`). */
export function growth(
  before: ResourceSnapshot,
  after: ResourceSnapshot,
): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {}
  for (const kind of new Set([...Object.keys(before.resources), ...Object.keys(after.resources)])) {
    const b = before.resources[kind] ?? 0
    const a = after.resources[kind] ?? 0
    if (a > b) out[kind] = [b, a]
  }
  if (after.processListeners > before.processListeners) {
    out['process listeners'] = [before.processListeners, after.processListeners]
  }
  return out
}

/**
 * What is still open beyond `baseline` once the run's keep-alive pools are
 * closed (pools are not leaks) and the kernel has had up to `settleMs` to close
 * the last sockets — no event says when it has. `{}` means nothing leaked.
 */
export async function growthAfterClosing(
  baseline: ResourceSnapshot,
  closePools: () => Promise<void>,
  settleMs = 5000,
): Promise<Record<string, [number, number]>> {
  await closePools()
  await until(
    () => Object.keys(growth(baseline, snapshot())).length === 0,
    settleMs,
    'resources back to the baseline',
  ).catch(() => {})
  return growth(baseline, snapshot())
}
