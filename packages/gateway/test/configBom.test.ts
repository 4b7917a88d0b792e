import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GatewayConfigError, loadGatewayConfig } from '../src/index.js'

/** A config file saved with a UTF-8 byte order mark (Notepad, PowerShell's `Out-File`) loads like one without. */
describe('a config file with a UTF-8 BOM', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hourglass-bom-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  const config = {
    providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
    models: { m: { fallback: [{ provider: 'p', model: 'gpt' }] } },
  }

  it('loads', async () => {
    const file = join(dir, 'bom.json')
    await writeFile(file, `\uFEFF${JSON.stringify(config, null, 2)}`, 'utf8')
    const loaded = await loadGatewayConfig(file)
    expect(Object.keys(loaded.providers)).toEqual(['p'])
  })

  it('and its JSON errors still say where', async () => {
    const file = join(dir, 'bom-broken.json')
    await writeFile(file, '\uFEFF{} x', 'utf8')
    const error = (await loadGatewayConfig(file).catch((e: unknown) => e)) as GatewayConfigError
    expect(error.problems).toEqual([
      // Counted as an editor shows the file: the mark is not a character.
      { field: '(json)', message: 'not valid JSON (at character 3)' },
    ])
  })
})
