import { describe, expect, it } from 'vitest'
import type { Io } from '../../packages/cli/src/Command.js'
import { progressLine } from '../../packages/cli/src/progressLine.js'

/** A terminal `columns` wide: what was written to stderr, each redraw as it was sent. */
function terminal(columns: number | undefined) {
  const writes: string[] = []
  const io: Io = {
    stdout: () => {},
    stderr: (text) => writes.push(text),
    stderrIsTTY: true,
    stderrColumns: () => columns,
  }
  return { io, writes }
}

describe('a progress line redrawn in place', () => {
  it('never reaches the last column of a narrow terminal: a wrapped line cannot be redrawn with \\r', () => {
    const { io, writes } = terminal(30)
    const line = progressLine(io)
    line.update(`probing ${'a-long-host-name.example.com'}: sampling 3/10`)
    line.update('probing short: sampling 4/10')
    line.clear()
    for (const w of writes) expect(w.replace(/\r/g, '').length).toBeLessThanOrEqual(29)
  })

  it('is cut at 79 columns when the width is unknown or wide', () => {
    // 0 is what a pty sized 0×0 reports (`script`, `docker exec -t` before
    // its resize): unknown, not a terminal one column wide.
    for (const columns of [undefined, 0, 200]) {
      const { io, writes } = terminal(columns)
      progressLine(io).update('x'.repeat(300))
      expect(writes[0]).toBe(`\r…${'x'.repeat(78)}`)
    }
  })

  it('keeps its end, the part that moves, when a long host name does not fit: the count is never cut off', () => {
    // An ALB's name on an 80-column terminal: cut at its end, the line read
    // `probing internal-payments-alb-….amazonaws.com:8443: sam` through every call.
    const host = 'internal-payments-alb-1234567890.eu-west-1.elb.amazonaws.com:8443'
    const { io, writes } = terminal(80)
    const line = progressLine(io)
    line.update(`probing ${host}: sampling 3/10`)
    line.update(`probing ${host}: sampling 4/10`)
    expect(writes.map((w) => w.replace(/\r/g, ''))).toEqual([
      `…${`probing ${host}: sampling 3/10`.slice(-78)}`,
      `…${`probing ${host}: sampling 4/10`.slice(-78)}`,
    ])
    expect(writes[1]).toMatch(/elb\.amazonaws\.com:8443: sampling 4\/10$/)
    // And the demo's line in a 40-column pane still shows how far it is.
    const narrow = terminal(40)
    progressLine(narrow.io).update(
      'sending the same traffic through both chains: 20/60 answered or given up',
    )
    expect(narrow.writes[0]).toMatch(/^\r….{38}$/)
    expect(narrow.writes[0]).toMatch(/ 20\/60 answered or given up$/)
  })
})
