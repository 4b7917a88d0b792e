import { describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { baseURLProblem } from '../../src/index.js'

/*
 * generativelanguage.googleapis.com serves two APIs: Gemini's own below
 * `/v1beta` (`/models/{model}:generateContent`) and an OpenAI-compatible one
 * below `/v1beta/openai` (`/chat/completions`). The base of one given to the
 * adapter of the other was accepted, and every request asked a path that
 * host does not serve: `…/v1beta/openai/models/gemini-x:generateContent`
 * from the Gemini adapter (the address Google's OpenAI guide gives), or
 * `…/v1beta/chat/completions` from an OpenAI one — a 404 on every call.
 */

function refusal(make: () => ModelAdapter): string {
  try {
    void make().close()
  } catch (e) {
    expect(e).toBeInstanceOf(TypeError)
    return (e as Error).message
  }
  throw new Error('the adapter was made')
}

const options = (baseURL: string) => ({ baseURL, apiKey: 'k-fine', model: 'gemini-2.5-flash' })

describe('Gemini’s two addresses, each with its own wire', () => {
  it('the Gemini adapter refuses Google’s OpenAI-compatible address', () => {
    for (const url of [
      'https://generativelanguage.googleapis.com/v1beta/openai',
      'https://generativelanguage.googleapis.com/v1beta/openai/',
    ]) {
      expect(refusal(() => gemini(options(url)))).toMatch(
        /^gemini adapter: baseURL must be .*ends in \/openai, Google’s OpenAI-compatible API.*end it before \/openai \(https:\/\/generativelanguage\.googleapis\.com\/v1beta\)/,
      )
    }
  })

  it('an OpenAI adapter refuses Google’s native address', () => {
    expect(
      refusal(() => openAICompatible(options('https://generativelanguage.googleapis.com/v1beta'))),
    ).toMatch(/under \/v1beta\/openai only/)
  })

  it('each takes its own, and other hosts’ /openai paths are no concern of this rule', () => {
    const made = [
      gemini(options('https://generativelanguage.googleapis.com/v1beta')),
      openAICompatible(options('https://generativelanguage.googleapis.com/v1beta/openai/')),
      gemini(options('http://localhost:8080/openai')),
    ]
    for (const adapter of made) void adapter.close?.()
    expect(made.map((a) => a.baseURL)).toEqual([
      'https://generativelanguage.googleapis.com/v1beta',
      // The trailing slash trimmed, as every adapter keeps its base.
      'https://generativelanguage.googleapis.com/v1beta/openai',
      'http://localhost:8080/openai',
    ])
    expect(baseURLProblem('https://generativelanguage.googleapis.com/v1beta', 'gemini')).toBe(
      undefined,
    )
  })

  it('baseURLProblem says what the adapter throws, after "baseURL "', () => {
    const url = 'https://generativelanguage.googleapis.com/v1beta/openai'
    expect(`gemini adapter: baseURL ${baseURLProblem(url, 'gemini')}`).toBe(
      refusal(() => gemini(options(url))),
    )
    expect(baseURLProblem('https://api.anthropic.com/v1', 'anthropic')).toMatch(
      /drop the trailing \/v1/,
    )
    expect(baseURLProblem('https://api.anthropic.com', 'anthropic')).toBeUndefined()
  })
})
