import { describeValue } from '@hourglass/core'

/** The methods a call uses of the admission it is given (`callModel`'s `limits.admission`, the default). */
export const ADMISSION_METHODS = ['acquire', 'forecast'] as const
/** The methods a call uses of a retry-budget registry (`callModel`'s `retryBudgets`, the default). */
export const RETRY_BUDGETS_METHODS = ['forProvider'] as const

/**
 * Refuses a shared object without every one of `methods` (`TypeError`,
 * `${where}: ${name} must be ${rule}, got …`); undefined and null pass (the
 * default, as every option reads null). Checked where the object is given:
 * taken, the first call to use it failed as "x is not a function", naming
 * neither the option nor what it takes. One check for `callModel`'s options,
 * `new Admission`'s and the process-wide setters, so what each accepts is
 * the same object.
 */
export function assertMethods(
  where: string,
  name: string,
  value: unknown,
  methods: readonly string[],
  rule: string,
): void {
  if (value == null) return
  if (
    typeof value === 'object' &&
    methods.every((m) => typeof (value as Record<string, unknown>)[m] === 'function')
  ) {
    return
  }
  throw new TypeError(`${where}: ${name} must be ${rule}, got ${describeValue(value)}`)
}
