import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

/**
 * `reportExpired` writes nothing: the app's own 504 goes out as the app wrote
 * it. The README's example is what apps copy, so it must carry the wire's
 * "do not retry" (`x-deadline-expired: 1`) that `deadline()`'s own 504 and
 * `respond`'s answer carry: without it a caller retrying 504s sent the spent
 * request again. Only when the budget was the caller's (`callersBudget`):
 * a cap of the server's own leaves the caller its time.
 */
describe('the README example of reportExpired', () => {
  it('sets x-deadline-expired and x-should-retry: false on its own 504', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('## `reportExpired('))
    const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
    expect(example).toContain('reportExpired(req)')
    const start = example.indexOf('.status(504)')
    const answer = example.slice(start, example.indexOf('.json(', start))
    expect(answer).toContain("if (callersBudget(req)) res.set(DEADLINE_EXPIRED_HEADER, '1')")
    // The OpenAI and Anthropic SDKs read only this one: without it they sent the spent request twice more.
    expect(answer).toContain("set('x-should-retry', 'false')")
  })
})
