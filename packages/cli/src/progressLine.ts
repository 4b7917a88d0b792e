import type { Io } from './Command.js'

/**
 * A progress line on stderr, redrawn in place with `\r` — only on a terminal,
 * so piped or captured output (tests, CI logs) stays clean.
 */
export function progressLine(io: Io): ProgressLine {
  let width = 0
  const line: ProgressLine = {
    update(text) {
      if (!io.stderrIsTTY) return
      // One row less than the terminal is wide (80 when unknown): a line that
      // wraps cannot be redrawn with `\r`, which goes back to the start of
      // its last row only, and the rows above it piled up. A terminal that
      // reports 0 columns (a pty sized 0×0: `script`, `docker exec -t` before
      // its resize) does not know its width either; taken at its word, every
      // redraw was cut to one character.
      const reported = io.stderrColumns?.()
      const columns = reported !== undefined && reported > 0 ? reported : 80
      const shown = text.slice(0, Math.max(1, Math.min(79, columns - 1)))
      io.stderr(`\r${shown.padEnd(width)}`)
      width = shown.length
      if (width > 0) drawn.add(line)
      else drawn.delete(line)
    },
    clear() {
      if (!io.stderrIsTTY || width === 0) return
      io.stderr(`\r${' '.repeat(width)}\r`)
      width = 0
      drawn.delete(line)
    },
  }
  return line
}

export interface ProgressLine {
  update(text: string): void
  clear(): void
}

/** The lines on screen now: drawn, not cleared yet. */
const drawn = new Set<ProgressLine>()

/**
 * Clears every progress line still on screen: a stop signal ends the command
 * (`exitOnStopSignals`) before it clears its own, and Ctrl-C left the half
 * line it was drawing there, the shell's prompt after it.
 */
export function clearProgressLines(): void {
  for (const line of drawn) line.clear()
}
