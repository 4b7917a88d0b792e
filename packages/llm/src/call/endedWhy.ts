import { isStreamInterrupted } from '../errors/StreamInterruptedError.js'

/**
 * The why of an attempt ended by a throw (the call stopped, or a stream
 * broken after its first token), from its `errorKind` (`endedKind`).
 */
export function endedWhy(thrown: unknown, errorKind: string | undefined): string | undefined {
  if (errorKind === 'deadline_exceeded') return 'no-budget'
  if (errorKind === 'aborted') return 'aborted'
  return isStreamInterrupted(thrown) ? 'after-first-byte' : undefined
}
