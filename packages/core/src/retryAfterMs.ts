import { MAX_TIMER_MS } from './clock.js'
import { trimOws } from './trimOws.js'

/**
 * The wait a `Retry-After` field asks for (RFC 9110 §10.2.3), in whole
 * milliseconds from `nowMs` (epoch ms); `undefined` when absent or
 * unreadable — "no hint", for the caller's own policy to fill — and 0 for
 * `0` or a date already past. The one reader of the field: @hourglass/fetch's
 * retry and @hourglass/llm's error hints read it alike.
 *
 * - delay-seconds: digits (`1*DIGIT`), and a decimal fraction read too
 *   (`1.5` → 1500 ms), as undici's RetryHandler and the openai client read
 *   it: what the server meant is plain, and no hint would retry sooner.
 *   `-5`, `1e9`, `.5` are none. However many digits, at most `MAX_TIMER_MS`
 *   (one past what a double holds is the longest wait, not no hint).
 * - an HTTP-date in any of its three forms, all GMT: IMF-fixdate
 *   (`Sun, 06 Nov 1994 08:49:37 GMT`), obsolete RFC 850
 *   (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
 *   (`Sun Nov  6 08:49:37 1994`), read by their grammar. `Date.parse` read
 *   asctime, which names no zone, in the host's (five hours off in New
 *   York), and took anything for a date: `-0000005` and `5, 5` were dates
 *   in 2001, already past, so a retry at once of a server that asked for
 *   time.
 * - a field sent twice (an app and a proxy both set it), which fetch's
 *   `Headers` join (`30, 30`): its first member counts, as undici's
 *   interceptor reads the first raw value. An IMF-fixdate has a comma of
 *   its own: the member is matched whole, never cut at its first comma.
 */
export function retryAfterMs(value: string | null | undefined, nowMs: number): number | undefined {
  if (typeof value !== 'string') return undefined
  // Only HTTP's optional whitespace (space, tab) around a field value.
  const text = trimOws(value)
  const seconds = DELAY_SECONDS.exec(text)
  if (seconds !== null) return Math.min(Math.ceil(Number(seconds[1]) * 1000), MAX_TIMER_MS)
  const at = httpDateMs(text, nowMs)
  if (at === undefined || !Number.isFinite(nowMs)) return undefined
  return Math.min(Math.max(0, Math.ceil(at - nowMs)), MAX_TIMER_MS)
}

/** Then nothing, or a comma and the rest of a joined list. */
const REST = '[ \\t]*(?:,.*)?$'
const DELAY_SECONDS = new RegExp(`^(\\d+(?:\\.\\d+)?)${REST}`)

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const MONTH = `(${MONTHS.join('|')})`
const DAY = '(?:mon|tue|wed|thu|fri|sat|sun)'
const LONG_DAY = '(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)'
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})'
// GMT, as HTTP writes it; UTC and +0000 (servers that format the date
// themselves) name the same zone, and undici and the openai client read them.
const ZONE = '(?:GMT|UTC|\\+0000)'
// HTTP-dates are case-sensitive (RFC 9110 §5.6.7); "gmt" or "TUE" is no other
// date, so reading it is kinder than a retry at once.
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{1,2}) ${MONTH} (\\d{4}) ${TIME} ${ZONE}${REST}`, 'i')
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} ${ZONE}${REST}`, 'i')
const ASCTIME = new RegExp(`^${DAY} ${MONTH} +(\\d{1,2}) ${TIME} (\\d{4})${REST}`, 'i')

/** An HTTP-date's first member as epoch ms, or undefined. */
function httpDateMs(text: string, nowMs: number): number | undefined {
  let match = IMF_FIXDATE.exec(text)
  if (match !== null) {
    const [, day, month, year, h, m, s] = match as unknown as string[]
    return utc(Number(year), month!, day!, h!, m!, s!)
  }
  match = ASCTIME.exec(text)
  if (match !== null) {
    const [, month, day, h, m, s, year] = match as unknown as string[]
    return utc(Number(year), month!, day!, h!, m!, s!)
  }
  match = RFC_850.exec(text)
  if (match !== null) {
    const [, day, month, yy, h, m, s] = match as unknown as string[]
    // A two-digit year more than 50 years ahead is the most recent past year
    // with those digits (RFC 9110 §5.6.7).
    const thisYear = new Date(Number.isFinite(nowMs) ? nowMs : 0).getUTCFullYear()
    let year = Math.floor(thisYear / 100) * 100 + Number(yy)
    if (year > thisYear + 50) year -= 100
    return utc(year, month!, day!, h!, m!, s!)
  }
  return undefined
}

/** The time in GMT, or undefined for a day or time no calendar has (31 Feb, 25:00). */
function utc(
  year: number,
  monthName: string,
  day: string,
  h: string,
  m: string,
  s: string,
): number | undefined {
  const month = MONTHS.indexOf(monthName.toLowerCase())
  // Second 60: a leap second, as IMF allows.
  if (Number(h) > 23 || Number(m) > 59 || Number(s) > 60) return undefined
  const minute = Date.UTC(year, month, Number(day), Number(h), Number(m))
  const date = new Date(minute)
  if (date.getUTCDate() !== Number(day) || date.getUTCMonth() !== month) return undefined
  return minute + Number(s) * 1000
}
