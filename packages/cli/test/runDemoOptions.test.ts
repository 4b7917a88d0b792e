import { expect, it } from 'vitest'
import { type RunDemoOptions, runDemo } from '../src/index.js'

// runDemo(options) is the README's programmatic demo. Nothing judged its
// options: `budgetsMs: []` ran 30 requests with an undefined budget (figures
// under a budget "undefined"), a seed 'x' ran as if given, a negative budget
// went out as a header. Each is now refused before any server starts, naming
// the option, as the CLI refuses its flags.

it.each<[RunDemoOptions, string]>([
  [
    { budgetsMs: [] },
    'budgetsMs must be a non-empty array of whole numbers of ms from 1 to 2147483647, got an array',
  ],
  [{ budgetsMs: [300, -5] }, 'budgetsMs must be a non-empty array'],
  [{ seed: 'x' as unknown as number }, "seed must be a whole number from 0 to 2147483647, got 'x'"],
  [{ requests: 0 }, 'requests must be a whole number from 1 to 10000, got 0'],
  [{ graceMs: -1 }, 'graceMs must be a whole number from 0 to 2147483647, got -1'],
  [{ everyMs: Number.NaN }, 'everyMs must be a whole number'],
  [{ onProgress: 1 as unknown as () => void }, 'onProgress must be a function'],
  [{ budgetMs: [500] } as unknown as RunDemoOptions, 'budgetMs'],
])('runDemo(%j) is refused at once, naming the option', async (options, message) => {
  await expect(runDemo(options)).rejects.toThrow(message)
})

it.each<[unknown, string]>([
  [5, 'options must be an object (RunDemoOptions), got 5'],
  [{ onProgress: 1 }, 'onProgress must be a function, got 1'],
  [
    { budgetsMs: 500 },
    'budgetsMs must be a non-empty array of whole numbers of ms from 1 to 2147483647, got 500',
  ],
])(
  'runDemo(%j), a value of the wrong kind, is a TypeError as runDemo(null) is, not a RangeError',
  async (options, message) => {
    const error = await runDemo(options as RunDemoOptions).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toBe(message)
  },
)
