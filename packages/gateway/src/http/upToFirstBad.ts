import { z } from 'zod'

/** A list's own checks: zod's `error` for a value that is not one, and its length's bounds. */
export interface ListChecks {
  error?: string
  min?: readonly [number, { error: string }?]
  max?: readonly [number, { error: string }?]
}

/**
 * A list whose length the client sets, read up to its first bad element,
 * at every length and depth: zod reports every element that fails, and an
 * issue costs it some 15 µs where a valid element costs well under one.
 * 2,000,000 × `1` as one message's content (3.8 MiB, within the body limit)
 * held the event loop 18 s for one 400, and many short lists did the same
 * between them: 1,000 messages of 1,000 bad parts each, 4.6 s; of 1,024
 * bad annotations, 14 s; of 512 bad tool_calls, 9 s. Each element is parsed
 * once, as zod's own array parses it, and the first that fails is the
 * list's refusal: the gateway reports one problem (`firstProblem`), so a
 * bad body costs what its valid part does, and the field named is the
 * first bad element's whatever the list's length (a cut made only past a
 * length named a later, deeper field below it).
 *
 * The list's own checks are zod's, with their messages, run only when they
 * fail (a value that is not a list, a length out of bounds) on elements
 * left unread: a list past its `max` is refused by its length alone
 * whatever zod's version (before 4.6 zod read every element first). Public
 * zod only (`safeParse`): the package takes zod ^4.1, and `validate` came
 * with 4.6.
 */
export function upToFirstBad<T extends z.ZodType>(element: T, checks: ListChecks = {}) {
  let list = z.array(z.unknown(), checks.error === undefined ? undefined : { error: checks.error })
  if (checks.min !== undefined) list = list.min(...checks.min)
  if (checks.max !== undefined) list = list.max(...checks.max)
  const min = checks.min?.[0] ?? 0
  const max = checks.max?.[0] ?? Number.POSITIVE_INFINITY
  return z.unknown().transform((value, ctx): Array<z.output<T>> => {
    if (!Array.isArray(value) || value.length < min || value.length > max) {
      return refuse(list.safeParse(value), [], ctx)
    }
    const parsed: Array<z.output<T>> = []
    for (let index = 0; index < value.length; index++) {
      const result = element.safeParse(value[index])
      if (!result.success) return refuse(result, [index], ctx)
      parsed.push(result.data)
    }
    return parsed
  })
}

/** `result`'s issues, as zod finished them (messages included), below `path`. */
function refuse(
  result: z.ZodSafeParseResult<unknown>,
  path: PropertyKey[],
  ctx: z.core.$RefinementCtx,
): never {
  for (const issue of result.error?.issues ?? []) {
    ctx.addIssue({ ...issue, path: [...path, ...issue.path] } as z.core.$ZodSuperRefineIssue)
  }
  return z.NEVER
}
