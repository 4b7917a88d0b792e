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
      expect(writes[0]).toBe(`\r${'x'.repeat(79)}`)
    }
  })
})
