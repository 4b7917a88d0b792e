import { FLAG_TAGS } from './escapeUnprintable.js'

/**
 * `text` at most `maxChars` long, `…` last when cut; never between the two
 * halves of a surrogate pair: a lone half is no text a client can encode
 * (openai-python raised on printing it). Never inside a subdivision's flag
 * either (🏴, tag letters, the cancel tag: Scotland's): cut before its 🏴.
 * A flag cut short is a plain black flag followed by tags, which
 * `escapeUnprintable` then shows as hidden characters (`\udb40\udc67`).
 */
export function cutText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  let end = Math.max(0, maxChars - 1)
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${text.slice(0, flagStartAround(text, end))}…`
}

// A flag is at most 2 + 32 × 2 + 2 UTF-16 units (FLAG_TAGS): only a flag
// starting this close before the cut can straddle it, so a long text is not
// scanned whole.
const MAX_FLAG_UNITS = 68
const FLAG = new RegExp(FLAG_TAGS, 'gu')

/** Where the flag `end` falls inside starts, else `end`. */
function flagStartAround(text: string, end: number): number {
  const from = Math.max(0, end - MAX_FLAG_UNITS)
  const near = text.slice(from, end + MAX_FLAG_UNITS)
  for (const match of near.matchAll(FLAG)) {
    const start = from + match.index
    if (start < end && end < start + match[0].length) return start
  }
  return end
}
