import { cutText } from './cutText.js'
import { describeValue } from './describeValue.js'
import { escapeUnprintable } from './escapeUnprintable.js'
import { type DeadlineSource, KNOWN_DEADLINE_SOURCES } from './headerNames.js'

/**
 * @internal A list of inbound deadline headers to trust, as the lower-case
 * names they are matched by, each one known; `what` names the option in the
 * error (`trust`, `readDeadline: sources`, `DeadlinePropagator: sources`).
 * An unknown name (`grpc_timeout`, a header of another convention) trusted
 * nothing without a word — every inbound deadline ignored — so it is a
 * `RangeError` naming it and the known ones. Header names are
 * case-insensitive: `X-Deadline-Remaining-Ms` is that header (one reader
 * took it and two refused it). One check for every taker of such a list.
 */
export function knownDeadlineSources(
  sources: readonly unknown[],
  what: string,
): readonly DeadlineSource[] {
  const known = KNOWN_DEADLINE_SOURCES as readonly string[]
  let lowered: string[] | undefined
  for (let i = 0; i < sources.length; i++) {
    const source = sources[i]
    if (typeof source === 'string' && known.includes(source)) {
      lowered?.push(source)
      continue
    }
    const lower = typeof source === 'string' ? source.toLowerCase() : undefined
    if (lower === undefined || !known.includes(lower)) {
      const shown =
        typeof source === 'string'
          ? `"${escapeUnprintable(cutText(source, 40))}"`
          : describeValue(source)
      throw new RangeError(
        `${what} lists an unknown header ${shown} (known: ${KNOWN_DEADLINE_SOURCES.join(', ')})`,
      )
    }
    lowered ??= sources.slice(0, i) as string[]
    lowered.push(lower)
  }
  return (lowered ?? sources) as readonly DeadlineSource[]
}
