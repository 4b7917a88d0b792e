/** One diagnostic of `tsc --pretty false`. */
export interface TscDiagnostic {
  /** As tsc printed it (relative to its working directory); undefined for a global one. */
  file: string | undefined
  /** 1-based. */
  line: number
  code: string
  /** The message's lines: a chain's further ones indented two spaces a level, as tsc prints them. */
  message: string[]
  /** The diagnostic exactly as printed, every line of it. */
  text: string
}

const LOCATED = /^(.+)\((\d+),(\d+)\): error (TS\d+): (.*)$/
const GLOBAL = /^error (TS\d+): (.*)$/

/**
 * The diagnostics in what `tsc --pretty false` printed. Output that is not a
 * diagnostic (a crash's stack, a warning) becomes one of its own, with no
 * file and code "", so nothing tsc says is dropped.
 */
export function tscDiagnostics(output: string): TscDiagnostic[] {
  const found: TscDiagnostic[] = []
  for (const line of output.trimEnd().split(/\r?\n/)) {
    if (line === '') continue
    const located = LOCATED.exec(line)
    const global = located ? undefined : GLOBAL.exec(line)
    const last = found.at(-1)
    if (located) {
      const [, file, row = '0', , code = '', message = ''] = located
      found.push({ file, line: Number(row), code, message: [message], text: line })
    } else if (global) {
      const [, code = '', message = ''] = global
      found.push({ file: undefined, line: 0, code, message: [message], text: line })
    } else if (last && line.startsWith('  ')) {
      // A chained message's next line: tsc indents it under the first.
      last.message.push(line)
      last.text += `\n${line}`
    } else {
      found.push({ file: undefined, line: 0, code: '', message: [line], text: line })
    }
  }
  return found
}
