import { expect, it } from 'vitest'
import type { GatewayContext } from '../src/GatewayContext.js'
import { logIfBug } from '../src/http/logIfBug.js'

/** A context whose log keeps its lines: the one part of it logIfBug uses. */
function recording() {
  const lines: Array<{ level: string; event: string; fields: Record<string, unknown> }> = []
  const ctx = {
    log: (level: string, event: string, fields: Record<string, unknown>) =>
      lines.push({ level, event, fields }),
  } as unknown as GatewayContext
  return { ctx, lines }
}

// A bug's error goes to the log whole: class, message, stack, what it wraps.
// An Error whose `cause` getter threw was logged as `{ errorClass: 'object' }`
// alone, its readable message and stack lost with it.
it('an error whose cause cannot be read still logs its class, message and stack', () => {
  const { ctx, lines } = recording()
  const error = Object.defineProperty(new TypeError('the real bug'), 'cause', {
    get() {
      throw new Error('cause getter')
    },
  })
  logIfBug(ctx, 'internal_error', error)
  expect(lines).toHaveLength(1)
  expect(lines[0]?.fields).toMatchObject({
    errorClass: 'TypeError',
    reason: 'the real bug',
    stack: expect.stringContaining('the real bug'),
  })
})

it('what it wraps is listed, a cause that cannot be read left out', () => {
  const { ctx, lines } = recording()
  const inner = Object.defineProperty(new Error('inner'), 'cause', {
    get() {
      throw new Error('cause getter')
    },
  })
  logIfBug(ctx, 'internal_error', new Error('outer', { cause: inner }))
  expect(lines[0]?.fields).toMatchObject({ reason: 'outer', causes: ['Error: inner'] })
})

it('a value whose toString throws says what it is', () => {
  const { ctx, lines } = recording()
  logIfBug(ctx, 'internal_error', {
    toString() {
      throw new Error('no')
    },
  })
  expect(lines[0]?.fields).toEqual({ errorClass: 'object' })
})

it('a cause whose toString throws is left out, the others kept', () => {
  const { ctx, lines } = recording()
  const hostile = {
    toString() {
      throw new Error('no')
    },
  }
  const error = new AggregateError([new Error('kept'), hostile], 'outer', {
    cause: new Error('first'),
  })
  logIfBug(ctx, 'internal_error', error)
  expect(lines[0]?.fields).toMatchObject({ causes: ['Error: first', 'Error: kept'] })
})
