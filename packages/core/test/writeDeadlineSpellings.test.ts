import { Deadline, ManualClock, readDeadline, writeDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * A record that already held the header in another letter case got ours
 * beside it: sent, the request carried it twice, which a reader refuses as
 * malformed and answers with its default budget instead of ours.
 */
describe('writeDeadline into headers that hold another spelling of it', () => {
  const deadline = () => Deadline.after(250, { clock: new ManualClock() })

  it('replaces it in a plain record, other headers kept', () => {
    const headers: Record<string, string> = {
      'X-Deadline-Remaining-Ms': '9000',
      'content-type': 'application/json',
    }
    expect(writeDeadline(headers, deadline())).toBe(250)
    expect(headers).toEqual({
      'x-deadline-remaining-ms': '250',
      'content-type': 'application/json',
    })
    expect(readDeadline(headers).ms).toBe(250)
  })

  it('replaces it in a Map (case-sensitive keys, unlike Headers)', () => {
    const headers = new Map([['X-DEADLINE-REMAINING-MS', '9000']])
    writeDeadline(headers, deadline())
    expect([...headers]).toEqual([['x-deadline-remaining-ms', '250']])
  })

  it('leaves Headers to its own case-insensitive set', () => {
    const headers = new Headers({ 'X-Deadline-Remaining-Ms': '9000' })
    writeDeadline(headers, deadline())
    expect([...headers]).toEqual([['x-deadline-remaining-ms', '250']])
  })
})

describe('writeDeadline into an array of header pairs', () => {
  it('is a TypeError naming the forms it takes, not a property set on the array and never sent', () => {
    const pairs: string[] = ['content-type', 'application/json']
    expect(() =>
      writeDeadline(pairs as never, Deadline.after(250, { clock: new ManualClock() })),
    ).toThrow(/not an array of pairs/)
    expect(pairs).toEqual(['content-type', 'application/json'])
  })
})
