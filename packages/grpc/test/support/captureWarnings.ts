import { vi } from 'vitest'

/** A process warning as `process.emitWarning(message, { type, code, detail })` was asked to emit it. */
export interface CapturedWarning {
  message: string
  type: string | undefined
  code: string | undefined
  detail: string | undefined
}

/**
 * Takes the process warnings with `code` instead of letting Node print them
 * (a `'warning'` listener only watches: Node's own still writes each to
 * stderr, so a test that provokes one on purpose printed it into CI's log).
 * Any other warning is emitted as usual: an unexpected one still shows.
 * `restore()` puts `process.emitWarning` back.
 */
export function captureWarnings(code: string): {
  warnings: CapturedWarning[]
  restore(): void
} {
  const warnings: CapturedWarning[] = []
  const original = process.emitWarning.bind(process) as (...args: unknown[]) => void
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(((
    warning: string | Error,
    ...rest: unknown[]
  ) => {
    const options = typeof rest[0] === 'object' && rest[0] !== null ? (rest[0] as Options) : {}
    if (options.code !== code) {
      original(warning, ...rest)
      return
    }
    warnings.push({
      message: typeof warning === 'string' ? warning : warning.message,
      type: options.type,
      code: options.code,
      detail: options.detail,
    })
  }) as typeof process.emitWarning)
  return { warnings, restore: () => spy.mockRestore() }
}

interface Options {
  type?: string
  code?: string
  detail?: string
}
