import { closeSync, constants, openSync, statSync } from 'node:fs'

/**
 * Lets go of a read of `path` left waiting when it is a FIFO: opening it to
 * write, then closing it, ends a reader's wait for a writer (and its read,
 * with end of file, unless another writer holds it). Without it, a stop
 * while the gateway read a FIFO nobody writes said so and then never
 * exited: Node's exit waits for the thread that reads. Nothing is written.
 * Best effort: any other file, or no reader waiting yet, is left alone.
 */
export function releaseFifoReaders(path: string): void {
  try {
    if (!statSync(path).isFIFO()) return
    // Non-blocking: opens only while a reader waits (else ENXIO, ignored).
    closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK))
  } catch {
    // Gone, not ours to open, or no reader: nothing waits on us.
  }
}
