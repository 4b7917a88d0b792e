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
