import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GatewayConfigError, loadGatewayConfig } from '../src/index.js'

/**
 * An empty config file (a `touch`ed path, a mount that came up empty) and
 * one cut short (a write interrupted) said only "not valid JSON": Node 20's
 * JSON errors for both name no position, so nothing told the operator that
 * the file held nothing, or ended early.
 */
describe('a config file that is empty or cut short says so', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hourglass-empty-config-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  const problemsOf = async (name: string, text: string) => {
    const file = join(dir, name)
    await writeFile(file, text, 'utf8')
    const error = (await loadGatewayConfig(file).catch((e: unknown) => e)) as GatewayConfigError
    return error.problems
  }

  it.each([
    ['empty', ''],
    ['whitespace only', ' \n\t\n'],
    ['a byte order mark alone', '\uFEFF'],
  ])('%s: the file is empty', async (_name, text) => {
    expect(await problemsOf('empty.json', text)).toEqual([
      { field: '(json)', message: 'the file is empty: a gateway config is one JSON object' },
    ])
  })

  it('cut short: not valid JSON, ending early', async () => {
    expect(await problemsOf('cut.json', '{"providers": ')).toEqual([
      { field: '(json)', message: 'not valid JSON (it ends before its last value is closed)' },
    ])
  })
})
