import { describe, expect, it } from 'vitest'
import { MAX_TIMER_MS, retryAfterMs } from '../src/index.js'

// RFC 9110 §10.2.3: Retry-After = HTTP-date / delay-seconds. Read at
// 2030-01-01T00:00:00Z; `undefined` is "no hint".
const now = Date.parse('2030-01-01T00:00:00Z')

const cases: ReadonlyArray<readonly [string, string | null | undefined, number | undefined]> = [
  // delay-seconds
  ['delay-seconds', '3', 3000],
  ['zero: no wait, a hint all the same', '0', 0],
  ['leading zeros', '0005', 5000],
  ['optional whitespace around it', ' \t7\t ', 7000],
  ['huge: the longest timer', '99999999999', MAX_TIMER_MS],
  ['past what a double holds: the longest timer, not no hint', '9'.repeat(400), MAX_TIMER_MS],
  // HTTP-date, its three forms, all GMT
  ['IMF-fixdate', 'Tue, 01 Jan 2030 00:00:03 GMT', 3000],
  ['IMF-fixdate, one-digit day', 'Tue, 1 Jan 2030 00:00:03 GMT', 3000],
  ['obsolete RFC 850', 'Tuesday, 01-Jan-30 00:00:03 GMT', 3000],
  ['asctime (no zone named: GMT)', 'Tue Jan  1 00:00:03 2030', 3000],
  ['asctime, one space', 'Tue Jan 1 00:00:03 2030', 3000],
  ['another case', 'tue, 01 jan 2030 00:00:03 gmt', 3000],
  ['a date already past', 'Mon, 31 Dec 2029 23:59:00 GMT', 0],
  ['RFC 850 a century ago', 'Friday, 01-Jan-99 00:00:00 GMT', 0],
  ['a date years ahead: the longest timer', 'Sat, 01 Jan 2050 00:00:00 GMT', MAX_TIMER_MS],
  // a zone written UTC or +0000 by a server that formats its own dates: GMT
  ['IMF-fixdate in UTC', 'Tue, 01 Jan 2030 00:00:30 UTC', 30_000],
  ['IMF-fixdate at +0000', 'Tue, 01 Jan 2030 00:00:30 +0000', 30_000],
  ['another offset: no hint', 'Tue, 01 Jan 2030 00:00:30 +0100', undefined],
  // joined lists (a field sent twice): the first member
  ['seconds twice', '5, 5', 5000],
  ['seconds, no space', '5,6', 5000],
  ['IMF-fixdate twice', 'Tue, 01 Jan 2030 00:00:03 GMT, Tue, 01 Jan 2030 00:00:09 GMT', 3000],
  ['asctime twice', 'Tue Jan  1 00:00:03 2030,Tue Jan  1 00:00:09 2030', 3000],
  ['RFC 850 then seconds', 'Tuesday, 01-Jan-30 00:00:03 GMT, 9', 3000],
  ['a first member unreadable', 'soon, 5', undefined],
  // no hint
  ['absent', undefined, undefined],
  ['null', null, undefined],
  ['empty', '', undefined],
  ['garbage', 'soon', undefined],
  ['negative seconds', '-5', undefined],
  ['a negative read as a year by Date.parse', '-0000005', undefined],
  ['fractional seconds, read as undici and the openai client read them', '1.5', 1500],
  ['a fraction under a millisecond, rounded up', '0.0001', 1],
  ['a fraction with no whole part', '.5', undefined],
  ['a trailing point', '5.', undefined],
  ['exponent', '1e9', undefined],
  ['RFC 3339 (no HTTP-date)', '2030-01-01T00:00:03Z', undefined],
  ['a date with no zone in IMF shape', 'Tue, 01 Jan 2030 00:00:03', undefined],
  ['a day no calendar has', 'Fri, 31 Feb 2030 00:00:00 GMT', undefined],
  ['an hour past 23', 'Tue, 01 Jan 2030 24:00:03 GMT', undefined],
  ['a bare month and day', 'Jan 2', undefined],
]

describe('retryAfterMs', () => {
  it.each(cases)('%s: %j', (_, value, expected) => {
    expect(retryAfterMs(value, now)).toBe(expected)
  })

  it("reads asctime as GMT in any host zone (Date.parse read it in the host's)", () => {
    const zone = process.env.TZ
    process.env.TZ = 'America/New_York'
    try {
      const asctime = 'Tue Jan  1 00:00:03 2030'
      const imf = 'Tue, 01 Jan 2030 00:00:03 GMT'
      const rfc850 = 'Tuesday, 01-Jan-30 00:00:03 GMT'
      expect(retryAfterMs(asctime, now)).toBe(3000)
      expect(retryAfterMs('Tue Jan 1 00:00:03 2030', now)).toBe(3000)
      // Joined lists, asctime's among them (an asctime sent twice read as 0: a retry at once).
      expect(retryAfterMs(`${asctime}, ${asctime}`, now)).toBe(3000)
      expect(retryAfterMs(`${asctime},${asctime}`, now)).toBe(3000)
      expect(retryAfterMs(`${asctime}, ${imf}`, now)).toBe(3000)
      expect(retryAfterMs(`${imf}, ${asctime}`, now)).toBe(3000)
      expect(retryAfterMs(`${rfc850}, ${rfc850}`, now)).toBe(3000)
    } finally {
      if (zone === undefined) delete process.env.TZ
      else process.env.TZ = zone
    }
  })

  it('a leap second at the end of a year is read, not refused', () => {
    expect(retryAfterMs('Mon, 31 Dec 2029 23:59:60 GMT', now)).toBe(0)
    expect(retryAfterMs('Mon, 31 Dec 2029 23:59:60 GMT', now - 1000)).toBe(1000)
  })
})
