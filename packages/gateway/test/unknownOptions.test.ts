import { describe, expect, it } from 'vitest'
import { createGateway, type GatewayOptions, startGateway } from '../src/index.js'

const CONFIG = {
  providers: { p: { dialect: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeys: ['k'] } },
  models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
}

/**
 * An option name the gateway does not read, or a boolean option given as a
 * string (from an environment variable), was silently ignored:
 * `drainTimeoutMS: 100` left the 10 s drain in force, `metrics: 'false'`
 * served `/metrics`. Both are refused when the gateway is made, before
 * anything is opened.
 */
describe('options the gateway does not read', () => {
  it('createGateway refuses an unknown option name, naming it and the one meant', () => {
    const options = { drainTimeoutMS: 100 } as unknown as GatewayOptions
    expect(() => createGateway(CONFIG, options)).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        code: 'GATEWAY_OPTION_INVALID',
        message: expect.stringMatching(
          /unknown option "drainTimeoutMS" \(did you mean drainTimeoutMs\?\); createGateway\(\) takes/,
        ),
      }),
    )
  })

  it('startGateway refuses one too, before listening; its own options are known', async () => {
    const options = { config: CONFIG, port: 0, drainOnSignals: false, metrix: false }
    await expect(
      startGateway(options as unknown as Parameters<typeof startGateway>[0]),
    ).rejects.toMatchObject({
      name: 'TypeError',
      code: 'GATEWAY_OPTION_INVALID',
      message: expect.stringMatching(
        /unknown option "metrix" \(did you mean metrics\?\); startGateway\(\) takes/,
      ),
    })
    const running = await startGateway({
      config: CONFIG,
      port: 0,
      host: '127.0.0.1',
      drainOnSignals: false,
      logger: () => {},
    })
    await running.close()
  })

  // Its options are checked where the gateway is made, but the error names
  // the function the user called (it said createGateway for startGateway's).
  it.each([
    ['drainTimeoutMs', -1],
    ['logLevel', 'verbose'],
    ['metrics', 'false'],
    ['maxBodyBytes', 0],
    ['clock', {}],
  ])('startGateway names itself for a bad %s', async (name, value) => {
    const options = { config: CONFIG, port: 0, drainOnSignals: false, [name]: value }
    const refused = startGateway(options as unknown as Parameters<typeof startGateway>[0])
    await expect(refused).rejects.toMatchObject({
      code: 'GATEWAY_OPTION_INVALID',
      message: expect.stringContaining(`startGateway: ${name}`),
    })
  })

  // The boolean options, as an environment variable hands them over.
  const BOOLEANS = ['metrics', 'mountDeadline', 'trustStainlessTimeout'] as const
  const each: [string, unknown][] = BOOLEANS.flatMap((name) =>
    ['false', 0, null].map((v): [string, unknown] => [name, v]),
  )

  it.each(each)('%s: %j is a TypeError naming it (true or false only)', (name, value) => {
    const options = { [name]: value } as unknown as GatewayOptions
    expect(() => createGateway(CONFIG, options)).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        code: 'GATEWAY_OPTION_INVALID',
        message: expect.stringContaining(`createGateway: ${name}`),
      }),
    )
  })

  it.each(BOOLEANS)('%s: false, true or left out are taken', async (name) => {
    for (const value of [false, true, undefined]) {
      const gateway = createGateway(CONFIG, { [name]: value, logger: () => {} })
      await gateway.close()
    }
  })
})
