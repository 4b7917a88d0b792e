/**
 * Strip HTTP's optional whitespace, SP and HTAB (RFC 9110 §5.6.3), from
 * either end, and nothing else. `String.prototype.trim` also strips \v, \f
 * and every Unicode space: Node decodes header bytes as Latin-1, so a 0xA0
 * byte arrives as U+00A0 (NBSP), and "500\u00a0" was read as 500. One pass
 * from each end, not `/^[ \t]+|[ \t]+$/g`: that regex tries its second
 * branch at every space of a run and scans to the end from each, so a
 * 16 KiB header of inner spaces held the event loop ~0.1 s per request.
 */
export function trimOws(raw: string): string {
  let start = 0
  let end = raw.length
  while (start < end && (raw[start] === ' ' || raw[start] === '\t')) start++
  while (end > start && (raw[end - 1] === ' ' || raw[end - 1] === '\t')) end--
  return raw.slice(start, end)
}
