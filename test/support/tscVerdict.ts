import type { TscDiagnostic } from './tscDiagnostics.js'

/** How one `tsc --pretty false` process ended, and what it printed (stdout and stderr). */
export interface TscEnd {
  code: number | null
  signal: NodeJS.Signals | null
  output: string
}

/**
 * Why `end` is not an answer of tsc's (killed, crashed, out of memory), or
 * undefined when it is one: exit 0 and nothing printed, or exit 1 or 2
 * (diagnostics, whether tsc then emitted or not) and only diagnostics
 * printed. A killed tsc printed nothing and reported no error: its silence
 * must not pass for a clean check.
 */
export function tscCrash(end: TscEnd, diagnostics: readonly TscDiagnostic[]): string | undefined {
  const errors = diagnostics.filter((d) => d.code !== '').length
  const other = diagnostics.length - errors
  const answered =
    end.signal === null &&
    ((end.code === 0 && diagnostics.length === 0) ||
      ((end.code === 1 || end.code === 2) && errors > 0 && other === 0))
  if (answered) return undefined
  const output = end.output.trim() === '' ? ' nothing' : `:\n${end.output.trimEnd()}`
  return `tsc did not finish its check (exit code ${end.code}, signal ${end.signal}), and printed${output}`
}

/**
 * The groups, other than `group`, that tsc reported errors in. tsc checks in
 * stages over the whole program (syntax, then types, then declarations) and
 * runs a stage only when the earlier ones found nothing anywhere: when another
 * group has errors, no error in `group` proves nothing, its later stages may
 * not have run.
 */
export function hiddenBy<G extends string>(
  group: NoInfer<G>,
  errors: Readonly<Record<G, number>>,
): G[] {
  return (Object.keys(errors) as G[]).filter((other) => other !== group && errors[other] > 0)
}
