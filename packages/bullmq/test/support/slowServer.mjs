// A slow upstream in its own process: it takes requests and never answers,
// and records when each connection closes, so the time a worker's call was
// abandoned is seen from the other end of the socket, by an event loop the
// worker's load cannot delay.
//
// Times are process.hrtime() in ms: CLOCK_MONOTONIC, one clock for every
// process on this host. Not performance.timeOrigin + now(): timeOrigin is
// the wall clock read once at each process's start, so a clock step between
// the worker's start and this one's (NTP stepping a freshly booted CI VM)
// shifted every close by the step — all of them late "at once" while every
// call rejected on time.
import { createServer } from 'node:http'

const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6

const arrived = {}
const closed = {}
// When this process's own event loop did not run (a loaded host left it
// unscheduled): a close it records after such a stall is late by the stall,
// not by the worker. The test prints them beside a late close.
const stalls = []
let tick = monotonicMs()
setInterval(() => {
  const now = monotonicMs()
  if (now - tick > 20) stalls.push({ from: tick, ms: now - tick })
  tick = now
}, 5).unref()

const server = createServer((req) => {
  const id = new URL(req.url ?? '/', 'http://x').searchParams.get('job') ?? '?'
  arrived[id] = monotonicMs()
  req.socket.once('close', () => {
    closed[id] = monotonicMs()
  })
})
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
process.on('message', (message) => {
  if (message === 'report') process.send({ arrived, closed, stalls })
  if (message === 'exit') {
    server.closeAllConnections()
    server.close(() => process.exit(0))
  }
})
