import { expect, it } from 'vitest'
import { isGatewayConfigError, parseGatewayConfig } from '../src/index.js'

// A config file whose JSON is no object — `[]`, a string, `null` — was
// refused in zod's words: "(root): Invalid input: expected object, received
// array". It says what the file must be now, without echoing its content.
it.each([
  ['[]', 'an array'],
  ['"providers"', 'a string'],
  ['null', 'null'],
  ['42', 'a number'],
])('a config that is %s is refused as no JSON object, in one problem', (json, got) => {
  let problems: string[] = []
  try {
    parseGatewayConfig(JSON.parse(json), { env: {} })
  } catch (error) {
    if (!isGatewayConfigError(error)) throw error
    problems = error.problems.map((p) => `${p.field}: ${p.message}`)
  }
  expect(problems).toEqual([
    `(root): the config must be a JSON object ({ "providers": {…}, "models": {…} }), got ${got}`,
  ])
})
