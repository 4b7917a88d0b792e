import { once } from 'node:events'
import type { Command } from '../Command.js'
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
    const { values } = parseCommandArgs('gateway', args, {
      allowPositionals: false,
      options: {
        config: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
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
    // Imported when used: the gateway package (and what it pulls in) costs the
    // other commands nothing.
    const { isGatewayConfigError, loadGatewayConfig, startGateway } = await import(
      '@hourglass/gateway'
    )
    let running: Awaited<ReturnType<typeof startGateway>>
    try {
      running = await startGateway({ config: await loadGatewayConfig(values.config), port, host })
    } catch (error) {
      if (isGatewayConfigError(error)) {
        // One line per bad field: a typo names the field, not a stack trace.
        for (const problem of error.problems) {
          io.stderr(`hourglass gateway: ${values.config}: ${problem.field}: ${problem.message}\n`)
        }
        return 2
      }
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        io.stderr(`hourglass gateway: ${host}:${port} is already in use\n`)
        return 1
      }
      throw error
    }
    io.stdout(`hourglass gateway listening on ${running.url}/v1\n`)
    await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')])
    await running.close()
    return 0
  },
}
