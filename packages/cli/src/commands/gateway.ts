import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import express from 'express'
import type { Command } from '../Command.js'
import { listen } from '../listen.js'
import { intOption, parseCommandArgs } from '../parseCommandArgs.js'
import { UsageError } from '../UsageError.js'

export const gatewayCommand: Command = {
  name: 'gateway',
  summary: 'an OpenAI-compatible gateway over your providers (@hourglass/gateway)',
  help: `Usage: hourglass gateway --config <file.json> [--port 8080] [--host 127.0.0.1]

Serves @hourglass/gateway: POST /v1/chat/completions, GET /v1/models,
GET /healthz. Point any OpenAI client at http://<host>:<port>/v1.

Options:
  --config <file>  the gateway config (JSON): providers, keys, limits, models
  --port <n>       port to listen on (default 8080; 0 = any free port)
  --host <addr>    address to bind (default 127.0.0.1)
  -h, --help       this help
`,
  async run(args, io) {
    const { values } = parseCommandArgs('gateway', () =>
      parseArgs({
        args,
        strict: true,
        allowPositionals: false,
        options: {
          config: { type: 'string' },
          port: { type: 'string' },
          host: { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
      }),
    )
    if (values.help) {
      io.stdout(gatewayCommand.help)
      return 0
    }
    if (values.config === undefined) {
      throw new UsageError(
        'hourglass gateway: --config <file.json> is required (see hourglass gateway --help)',
      )
    }
    const port = intOption('gateway', 'port', values.port, 8080, 0, 65_535)
    const host = values.host ?? '127.0.0.1'
    let config: unknown
    try {
      config = JSON.parse(await readFile(values.config, 'utf8'))
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      const why =
        error instanceof SyntaxError
          ? `is not valid JSON (${error.message})`
          : `cannot be read${code ? ` (${code})` : ''}`
      throw new UsageError(`hourglass gateway: --config ${values.config} ${why}`, { cause: error })
    }
    // Imported when used: the gateway package (and what it pulls in) costs the
    // other commands nothing.
    const gateway: Record<string, unknown> = await import('@hourglass/gateway')
    const createGateway = gateway['createGateway']
    if (typeof createGateway !== 'function') {
      io.stderr('hourglass gateway: this @hourglass/gateway build has no createGateway export\n')
      return 1
    }
    let router: express.RequestHandler & { close?: () => Promise<void> }
    try {
      router = await createGateway(config)
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      throw new UsageError(`hourglass gateway: invalid config: ${message.split('\n')[0]}`, {
        cause: error,
      })
    }
    const app = express()
    app.use(router)
    const server = await listen(app, port, host)
    io.stdout(`hourglass gateway listening on http://${host}:${server.port}/v1\n`)
    await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')])
    await server.close()
    await router.close?.()
    return 0
  },
}
