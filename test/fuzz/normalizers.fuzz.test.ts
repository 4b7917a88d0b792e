import { MAX_TIMER_MS } from '@hourglass/core'
import { type DialectName, dialects, ERROR_KINDS, type NormalizedError } from '@hourglass/llm'
import {
  anthropicErrors,
  deepseekErrors,
  doubaoErrors,
  type ErrorReply,
  ernieErrors,
  geminiErrors,
  openAIErrors,
  qwenErrors,
} from '@hourglass/testkit'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { jsonValue } from '../../packages/llm/test/support/jsonValue.js'
import { fuzzRuns } from '../support/fuzzRuns.js'

/**
 * What packages/llm/test/dialects/normalizerFuzz.test.ts (random shapes
 * over all dialects) does not do: cases for EACH provider's normaliser,
 * starting from that provider's real error bodies (testkit's documented
 * payloads) and mutating them — a value swapped for a hostile
 * one, a `__proto__`/`constructor` key planted at any depth, the body nested
 * 1,000 deep, truncated, re-encoded through invalid UTF-8, grown to 1 MB —
 * with and without the real headers. Every answer is a well-formed
 * normalised error (or, for a 2xx, possibly none); nothing throws; no
 * prototype is polluted; a non-2xx status is never taken for success.
 * 10,000 cases per dialect in `npm test` (each property also asserts it drew
 * every mutation kind, planted key and nesting depth, every real body, a
 * real and a random status, with and without headers); 200,000 under
 * `HOURGLASS_SOAK=long`, or `HOURGLASS_FUZZ_RUNS` for any count (50,000
 * each, the count until session 50, took 6–7 s of `npm test`'s two cores
 * for the seven dialects). Run it longer with `HOURGLASS_FUZZ_RUNS=1000000
 * npx vitest run test/fuzz/normalizers.fuzz.test.ts`.
 */
const RUNS = fuzzRuns(10_000, 200_000)

const REAL: Record<DialectName, ErrorReply[]> = {
  openai: [
    openAIErrors.rateLimited({ retryAfterS: 3 }),
    openAIErrors.insufficientQuota(),
    openAIErrors.contentPolicy(),
    openAIErrors.contextTooLong(),
    openAIErrors.serverError({ shouldRetry: false }),
  ],
  anthropic: [
    anthropicErrors.overloaded(),
    anthropicErrors.rateLimited({ retryAfterS: 2 }),
    anthropicErrors.promptTooLong(),
    anthropicErrors.apiError(),
  ],
  gemini: [
    geminiErrors.resourceExhausted({ retryDelay: '34s' }),
    geminiErrors.resourceExhausted({ limit: 0 }),
    geminiErrors.unavailable(),
    geminiErrors.invalidArgument(),
  ],
  deepseek: [
    deepseekErrors.insufficientBalance(),
    deepseekErrors.serverOverloaded(),
    deepseekErrors.rateLimited(),
  ],
  qwen: [qwenErrors.throttlingIn200(), qwenErrors.throttling(), qwenErrors.dataInspectionFailed()],
  ernie: [
    ernieErrors.rateLimited('rpm'),
    ernieErrors.rateLimited('daily'),
    ernieErrors.invalidToken(),
  ],
  doubao: [
    doubaoErrors.rateLimited('EndpointTPMExceeded'),
    doubaoErrors.serverOverloaded(),
    doubaoErrors.accountOverdue(),
  ],
}

const KINDS: ReadonlySet<string> = new Set(ERROR_KINDS)

function wellFormed(e: NormalizedError | undefined): boolean {
  if (e === undefined) return true
  return (
    KINDS.has(e.kind) &&
    typeof e.retryable === 'boolean' &&
    typeof e.status === 'number' &&
    typeof e.message === 'string' &&
    e.message.length <= 500 &&
    (e.providerCode === undefined || typeof e.providerCode === 'string') &&
    (e.retryAfterMs === undefined ||
      (Number.isInteger(e.retryAfterMs) && e.retryAfterMs >= 0 && e.retryAfterMs <= MAX_TIMER_MS))
  )
}

const hostileValue = fc.oneof(
  fc.constantFrom(
    null,
    true,
    0,
    -1,
    1e308,
    Number.MAX_SAFE_INTEGER,
    '',
    '__proto__',
    'constructor',
    'toString',
    '-5s',
    '1e999s',
    'NaN',
    '\u0000',
    '\ud800',
    'x'.repeat(10_000),
    [],
    {},
    { toString: 'not a function' },
    [[[[[]]]]],
  ),
  fc.string({ maxLength: 16 }),
  fc.integer(),
  jsonValue({ maxDepth: 2 }),
)

type Json = unknown
type Path = (string | number)[]

/** Every path to a value inside a JSON tree, in pre-order (a node before its entries, entries in `Object.entries` order). */
function paths(value: Json, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix)
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      paths(v, [...prefix, Array.isArray(value) ? Number(k) : k], out)
    }
  }
  return out
}

/** How many paths `paths(value)` has: one per node. */
function countPaths(value: Json): number {
  if (value === null || typeof value !== 'object') return 1
  let n = 1
  for (const v of Object.values(value)) n += countPaths(v)
  return n
}

/**
 * `paths(tree)[index]`, found by one walk that builds no path but the one
 * asked for (a tree made by a previous mutation is new each time: listing
 * every path of it, an array per node, was most of the cost of choosing one).
 */
function pathAt(tree: Json, index: number): Path {
  const stack: Path = []
  let left = index
  const walk = (value: Json): boolean => {
    if (left === 0) return true
    left--
    if (value === null || typeof value !== 'object') return false
    const array = Array.isArray(value)
    for (const [k, v] of Object.entries(value)) {
      stack.push(array ? Number(k) : k)
      if (walk(v)) return true
      stack.pop()
    }
    return false
  }
  walk(tree)
  return stack
}

/**
 * The real bodies' paths and JSON text, computed once: every case starts
 * from one of them, and a tree is never changed in place (`setAt` copies),
 * so a body's paths and text stay its paths and text.
 */
const REAL_PATHS = new WeakMap<object, Path[]>()
const REAL_TEXT = new WeakMap<object, string>()
for (const replies of Object.values(REAL)) {
  for (const { body } of replies) {
    if (body !== null && typeof body === 'object') {
      REAL_PATHS.set(body, paths(body))
      REAL_TEXT.set(body, JSON.stringify(body))
    }
  }
}

/** `paths(tree)[at % paths(tree).length]`. */
function choosePath(tree: Json, at: number): Path {
  if (tree === null || typeof tree !== 'object') return []
  const all = REAL_PATHS.get(tree)
  return all !== undefined ? all[at % all.length]! : pathAt(tree, at % countPaths(tree))
}

/** `JSON.stringify(tree)`, a real body's text read from the table. */
function textOf(tree: Json): string | undefined {
  return (tree !== null && typeof tree === 'object' && REAL_TEXT.get(tree)) || JSON.stringify(tree)
}

/** `tree` with the value at `path` (from `from` on) replaced: a copy along the path, `tree` itself untouched. */
function setAt(tree: Json, path: Path, value: Json, from = 0): Json {
  if (from === path.length) return value
  const head = path[from]!
  const copy = (Array.isArray(tree) ? [...tree] : { ...(tree as object) }) as Record<
    string | number,
    Json
  >
  copy[head] = setAt(copy[head], path, value, from + 1)
  return copy
}

type Mutation =
  | { kind: 'replace'; at: number; value: Json }
  | { kind: 'plant'; at: number; key: '__proto__' | 'constructor' | 'prototype'; value: Json }
  | { kind: 'nest'; depth: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'latin1' }
  | { kind: 'huge' }
  | { kind: 'wrap-array' }

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      at: fc.nat(),
      value: hostileValue,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('plant' as const),
      at: fc.nat(),
      key: fc.constantFrom('__proto__', 'constructor', 'prototype') as fc.Arbitrary<
        '__proto__' | 'constructor' | 'prototype'
      >,
      value: fc.oneof(
        hostileValue,
        fc.constant({ polluted: 'yes', kind: 'auth', retryable: true }),
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('nest' as const), depth: fc.constantFrom(50, 1000) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'latin1' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'wrap-array' as const }) },
)

/** `'{"error":'.repeat(depth)` and its closing braces, built once per depth. */
const NESTING = new Map<number, readonly [string, string]>()
function nesting(depth: number): readonly [string, string] {
  let both = NESTING.get(depth)
  if (both === undefined) {
    both = ['{"error":'.repeat(depth), '}'.repeat(depth)]
    NESTING.set(depth, both)
  }
  return both
}

/**
 * The body text after applying the mutations to the real payload. Nothing
 * here changes a tree in place (`setAt` and `wrap-array` build new ones), so
 * the real payload is used as it is, not cloned.
 */
function mutate(real: ErrorReply, mutations: Mutation[]): string {
  let tree: Json = real.body
  let text: string | undefined
  for (const m of mutations) {
    if (text !== undefined && m.kind !== 'truncate' && m.kind !== 'latin1') continue
    switch (m.kind) {
      case 'replace':
        tree = setAt(tree, choosePath(tree, m.at), m.value)
        break
      case 'plant': {
        const target = choosePath(tree, m.at)
        const json = JSON.stringify(setAt(tree, target, { [m.key]: m.value, inner: 'x' }))
        // JSON.stringify drops a `__proto__` set through an object literal; write it in the text.
        text = json.replace('"inner":"x"', `${JSON.stringify(m.key)}:${JSON.stringify(m.value)}`)
        break
      }
      case 'nest': {
        const [open, close] = nesting(m.depth)
        text = `${open}${textOf(tree)}${close}`
        break
      }
      case 'truncate': {
        const t = text ?? textOf(tree) ?? ''
        text = t.slice(0, m.at % (t.length + 1))
        break
      }
      case 'latin1': {
        // A UTF-8 body read as Latin-1 by a careless proxy, or raw bytes that are not UTF-8.
        const t = text ?? textOf(tree) ?? ''
        text = Buffer.from(`${t}\u00ff\ufffe`, 'utf8').toString('latin1') + '\xc3('
        break
      }
      case 'huge':
        text = JSON.stringify({ error: tree, padding: 'x'.repeat(1_000_000) })
        break
      case 'wrap-array':
        tree = [tree, tree]
        break
    }
  }
  return text ?? (typeof tree === 'string' ? tree : (textOf(tree) ?? ''))
}

const names = Object.keys(REAL) as DialectName[]

/** The generator branch a mutation came from: its kind, and the key or depth it chose. */
function branchOf(m: Mutation): string {
  if (m.kind === 'plant') return `plant ${m.key}`
  if (m.kind === 'nest') return `nest ${m.depth}`
  return m.kind
}

/** Every branch `branchOf` and the property's other choices can name, for one dialect. */
function branches(name: DialectName): string[] {
  return [
    ...REAL[name].map((_, i) => `body ${i}`),
    'status real',
    'status random',
    'headers true',
    'headers false',
    'replace',
    'plant __proto__',
    'plant constructor',
    'plant prototype',
    'nest 50',
    'nest 1000',
    'truncate',
    'latin1',
    'wrap-array',
  ].sort()
}

describe('provider error normaliser fuzz: mutated real payloads', () => {
  it('covers every dialect the toolkit ships', () => {
    expect(names.sort()).toEqual(Object.keys(dialects).sort())
  })

  it.each(names)(
    `%s: ${RUNS.toLocaleString('en-US')} mutated real error bodies, each normalised well-formed, no throw, no pollution`,
    (name) => {
      const dialect = dialects[name]
      let cases = 0
      let classified = 0
      const drawn = new Set<string>()
      fc.assert(
        fc.property(
          fc.constantFrom(...REAL[name]),
          fc.array(mutation, { minLength: 1, maxLength: 3 }),
          fc.oneof(fc.constant('real' as const), fc.integer({ min: 100, max: 599 })),
          fc.boolean(),
          (real, mutations, statusChoice, withHeaders) => {
            cases++
            drawn.add(`body ${REAL[name].indexOf(real)}`)
            drawn.add(statusChoice === 'real' ? 'status real' : 'status random')
            drawn.add(`headers ${withHeaders}`)
            for (const m of mutations) drawn.add(branchOf(m))
            const status = statusChoice === 'real' ? real.status : statusChoice
            const body = mutate(real, mutations)
            const e = dialect.normalizeError({
              status,
              body,
              ...(withHeaders && real.headers ? { headers: real.headers } : {}),
            })
            if (e !== undefined) classified++
            return wellFormed(e) && (e !== undefined || (status >= 200 && status < 300))
          },
        ),
        { numRuns: RUNS },
      )
      expect(cases).toBe(RUNS)
      // The count is small enough only because every generator branch is still drawn.
      if (RUNS >= 10_000) expect([...drawn].sort()).toEqual(branches(name))
      expect(classified).toBeGreaterThan(RUNS / 2) // the mutations do not just make everything unreadable
      expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false)
      expect(({} as Record<string, unknown>)['retryable']).toBeUndefined()
    },
    120_000,
  )

  it.each(names)('%s: a 1 MB body is classified without throwing', (name) => {
    for (const real of REAL[name]) {
      const e = dialects[name].normalizeError({
        status: real.status,
        body: mutate(real, [{ kind: 'huge' }]),
      })
      expect(wellFormed(e)).toBe(true)
    }
  })
})
