import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import { runMain } from '../../../test/cli/runMain.js'

// The README quoted the redirect refusal as "answered 302, a redirect: probe
// the URL it redirects to": the CLI names the Location ("a redirect to
// <location>:"), so a user grepping a log for the README's words found
// nothing. The README's quote is checked against what the CLI prints.

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

it("the README's quote of the redirect line is what probe prints", async () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  // `(`… answered 302, a redirect…: probe … …`)`: the quote, without its ellipses.
  const quote = /`… (answered 302, a redirect[^`]*?) …`/.exec(readme)?.[1]?.replace(/\s+/g, ' ')
  expect(quote, 'the README quotes the redirect line').toBeDefined()
  const location = /a redirect to (\S+):/.exec(quote!)?.[1] ?? 'https://example.test/new'
  server = createServer((_req, res) => res.writeHead(302, { location }).end())
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const run = await runMain(['probe', url, '--warmup', '0', '--samples', '1'])
  expect(run.code).toBe(1)
  expect(run.stderr).toContain(quote)
})
