import type { Io } from './Command.js'

/**
 * A progress line on stderr, redrawn in place with `\r` — only on a terminal,
 * so piped or captured output (tests, CI logs) stays clean. Elsewhere a
 * command may write it piece by piece (`append`: probe's one dot per call),
 * and a stop signal ends that line: a probe stopped by SIGTERM under a
 * supervisor left its log's last line open, the next writer's line glued to
 * its dots.
 */
export function progressLine(io: Io): ProgressLine {
  let width = 0
  // Off a terminal: a line appended to and not ended yet.
  let open = false
  const line: ProgressLine = {
    append(text) {
      if (io.stderrIsTTY || text === '') return
      io.stderr(text)
      open = !text.endsWith('\n')
      if (open) drawn.add(line)
      else drawn.delete(line)
    },
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
      const shown = fitted(text, Math.max(1, Math.min(79, columns - 1)))
      io.stderr(`\r${shown.padEnd(width)}`)
      width = shown.length
      if (width > 0) drawn.add(line)
      else drawn.delete(line)
    },
    clear() {
      if (!io.stderrIsTTY) {
        if (!open) return
        io.stderr('\n')
        open = false
        drawn.delete(line)
        return
      }
      if (width === 0) return
      io.stderr(`\r${' '.repeat(width)}\r`)
      width = 0
      drawn.delete(line)
    },
  }
  return line
}

/**
 * `text` in at most `max` columns, cut at its start, not its end: what a
 * progress line says moves at its end (`sampling 3/10`, `20/60 answered or
 * given up`). Cut at the end, a host name longer than the terminal left it
 * (`probing internal-….elb.amazonaws.com:8443: samp`, an 80-column terminal
 * and an ALB's name), and the line stood still through every call.
 */
function fitted(text: string, max: number): string {
  if (text.length <= max) return text
  if (max === 1) return '…'
  let tail = text.slice(text.length - (max - 1))
  // Never half an emoji: a low surrogate left without its pair is dropped.
  if (/^[\uDC00-\uDFFF]/.test(tail)) tail = tail.slice(1)
  return `…${tail}`
}

export interface ProgressLine {
  /** On a terminal: the line redrawn as `text`. Elsewhere nothing. */
  update(text: string): void
  /** Off a terminal: `text` written after what the line holds. On one nothing. */
  append(text: string): void
  /** On a terminal: the line wiped. Elsewhere: a line appended to is ended. */
  clear(): void
}

/** The lines on screen now: drawn (or appended to) and not cleared yet. */
const drawn = new Set<ProgressLine>()

/**
 * Clears every progress line still on screen, and ends one appended to: a
 * stop signal ends the command (`exitOnStopSignals`) before it clears its
 * own, and Ctrl-C left the half line it was drawing there, the shell's
 * prompt after it.
 */
export function clearProgressLines(): void {
  for (const line of drawn) line.clear()
}
