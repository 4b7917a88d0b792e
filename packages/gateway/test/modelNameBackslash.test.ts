import { describe, expect, it } from 'vitest'
import { configProblems as problems } from './support/configProblems.js'

describe('a model or alias name with a backslash', () => {
  it('is refused at its name: fetch and browsers send /v1/models/a\\b as /v1/models/a/b', () => {
    const message =
      'expected no "\\" in a model name: in GET /v1/models/{name} it is read as "/" by URL parsers (fetch, browsers: /v1/models/a\\b asks for /v1/models/a/b), so a URL written without escaping asks for another model'
    expect(
      problems({
        providers: { p: { dialect: 'openai', baseURL: 'https://a.example.com/v1' } },
        models: { 'team\\gpt': { fallback: [{ provider: 'p', model: 'gpt-4o' }] } },
        aliases: { 'al\\x': 'team\\gpt' },
      }),
    ).toEqual([`models["team\\\\gpt"]: ${message}`, `aliases["al\\\\x"]: ${message}`])
  })
})
