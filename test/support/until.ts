/**
 * Resolve once `condition()` holds, checking after every turn of the event
 * loop (I/O callbacks included), or reject after `timeoutMs`. For states no
 * event announces, such as "the kernel has closed the last socket".
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const started = performance.now()
  while (!(await condition())) {
    if (performance.now() - started > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    }
    await new Promise((resolve) => setImmediate(resolve))
  }
}
