// A keep-alive node:http server that answers every request with a short body,
// on 127.0.0.1 port 0: the upstream for the egress benchmark.
import { createServer } from 'node:http'
import { announceReady } from '../lib/child.js'

const body = Buffer.from('{"ok":true}')
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
  res.end(body)
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => announceReady({ port: server.address().port }))
