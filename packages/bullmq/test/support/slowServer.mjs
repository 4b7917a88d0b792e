// A slow upstream in its own process: it takes requests and never answers,
// and records when each connection closes, so the time a worker's call was
// abandoned is seen from the other end of the socket, by an event loop the
// worker's load cannot delay. Times are performance.timeOrigin + now(): one
// time base for both processes on this host.
import { createServer } from 'node:http'

const arrived = {}
const closed = {}
const server = createServer((req) => {
  const id = new URL(req.url ?? '/', 'http://x').searchParams.get('job') ?? '?'
  arrived[id] = performance.timeOrigin + performance.now()
  req.socket.once('close', () => {
    closed[id] = performance.timeOrigin + performance.now()
  })
})
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
process.on('message', (message) => {
  if (message === 'report') process.send({ arrived, closed })
  if (message === 'exit') {
    server.closeAllConnections()
    server.close(() => process.exit(0))
  }
})
