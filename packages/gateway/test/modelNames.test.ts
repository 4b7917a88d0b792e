import { describe, expect, it } from 'vitest'
import { configProblems as problems } from './support/configProblems.js'
import { fallback } from './support/harness.js'
import { openAIGateway } from './support/openAIGateway.js'

/**
 * A model or alias name is what clients send as `model` and ask for by
 * `GET /v1/models/{name}`. One that no URL carries as it is was accepted:
 * `GET /v1/models/gpt?x` written by hand answered the model `gpt`, `x%41`
 * asked for `xA`, `.` was read as the list, a trailing space or zero-width
 * space made a name nobody could ask for. Such names are refused when the
 * config is read, at their path, naming the character, with every other
 * problem; every name accepted is retrieved as it is.
 */
const provider = { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] }

const QUERY =
  'expected no "?" in a model name: in GET /v1/models/{name} it starts the query, so a URL written without escaping asks for another model'
const FRAGMENT =
  'expected no "#" in a model name: in GET /v1/models/{name} it starts the fragment (never sent), so a URL written without escaping asks for another model'
const ESCAPE =
  'expected no "%" in a model name: in GET /v1/models/{name} it starts an escape (%41 is read as "A"), so a URL written without escaping asks for another model'
const DOTS =
  'expected no "." or ".." as the name or a part of it between slashes: URLs resolve them (GET /v1/models/. is read as the list) and the official clients refuse to send them, so the model could never be retrieved'
const invisible = (code: string) =>
  `expected no spaces, line breaks, control or invisible characters in a model name (${code}): clients do not send them, and the name without it is another model`

/** Names an operator uses: OpenAI ids, fine-tunes, routers' provider/model, Vertex's @version, Ollama's tags. */
const GOOD = [
  'gpt-4o-mini',
  'ft:gpt-4o:org:custom:id',
  'openrouter/anthropic/claude-3.5-sonnet:beta',
  'Qwen/Qwen2.5-72B-Instruct',
  'claude-3-5-sonnet-v2@20241022',
  'llama3.1:8b',
  'a+b',
  '...',
  '通义千问',
]

describe('model and alias names', () => {
  it('one no URL carries as it is, refused at its path naming the character, with every other problem', () => {
    const model = fallback(['p', 'x'])
    expect(
      problems({
        providers: { p: provider },
        models: {
          'a/b?c#d': model,
          'frag#1': model,
          'x%41': model,
          '.': model,
          'org/..': model,
          'gpt-4o ': model,
          'line\nbreak': model,
          'zero\u200bwidth': model,
          'lone\ud800': model,
          large: { fallback: [{ provider: 'qwne', model: 'x' }] },
          // A route to a refused name is not reported unknown as well: the entry is kept.
          auto: { route: { small: 'a/b?c#d', large: 'gpt-4o ' } },
        },
        aliases: { 'gpt?': 'large', 'tab\tbed': 'large' },
      }),
    ).toEqual([
      `models["a/b?c#d"]: ${QUERY}`,
      `models["frag#1"]: ${FRAGMENT}`,
      `models["x%41"]: ${ESCAPE}`,
      `models["."]: ${DOTS}`,
      `models["org/.."]: ${DOTS}`,
      `models["gpt-4o "]: ${invisible('U+0020')}`,
      `models["line\\nbreak"]: ${invisible('U+000A')}`,
      `models["zero\u200bwidth"]: ${invisible('U+200B')}`,
      `models["lone\\ud800"]: expected no unpaired surrogate in a model name (U+D800): it has no UTF-8 form, so no URL can carry it`,
      `aliases["gpt?"]: ${QUERY}`,
      `aliases["tab\\tbed"]: ${invisible('U+0009')}`,
      'models.large.fallback[0].provider: unknown provider "qwne" (known: p)',
    ])
  })

  it('letters, digits, / : @ . - _ + and other scripts are accepted, as entries and as aliases', () => {
    expect(
      problems({
        providers: { p: provider },
        models: Object.fromEntries(GOOD.map((name) => [name, fallback(['p', 'x'])])),
        aliases: Object.fromEntries(GOOD.map((name) => [`alias/${name}`, GOOD[0]])),
      }),
    ).toEqual([])
  })

  it('a provider name’s refusal names the character too', () => {
    expect(
      problems({ providers: { 'a?b': provider }, models: { m: fallback(['a?b', 'x']) } }),
    ).toEqual([
      'providers["a?b"]: expected a provider name of ASCII letters, digits and - _ . : / only, not "?" (it is sent in the x-hourglass-provider header and used as a metric label)',
    ])
  })

  describe('every name accepted is retrieved as it is', () => {
    const gateway = openAIGateway({
      models: Object.fromEntries(GOOD.map((name) => [name, fallback(['p', 'x'])])),
      aliases: { 'alias/gpt-4o-mini': 'gpt-4o-mini' },
    })

    it('by the official client, and by a URL written by hand with only its slashes escaped', async () => {
      for (const id of [...GOOD, 'alias/gpt-4o-mini']) {
        const expected = { id, object: 'model', created: 0, owned_by: 'hourglass' }
        expect(await gateway.harness.client.models.retrieve(id), id).toEqual(expected)
        const res = await fetch(`${gateway.harness.url}/v1/models/${id.replaceAll('/', '%2F')}`)
        expect(res.status, id).toBe(200)
        expect(await res.json(), id).toEqual(expected)
      }
      expect(gateway.fake.requests).toHaveLength(0)
    })
  })
})
