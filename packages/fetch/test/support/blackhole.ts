import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { Worker } from 'node:worker_threads'

export interface Blackhole {
  close(): Promise<void>
}

/**
 * A TCP address on loopback that never answers a connect, as a dead or
 * firewalled host does: a listener (backlog 1) in a worker thread whose
 * event loop is then blocked, so it accepts nothing. Once its accept queue
 * holds the connections made here, the kernel drops every further SYN: a
 * connect to it neither succeeds nor fails. No network needed, no ms waited.
 */
export async function blackhole(host: string, port: number): Promise<Blackhole> {
  const lock = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(
    `
const { parentPort, workerData } = require('node:worker_threads')
const server = require('node:net').createServer()
server.on('error', (error) => parentPort.postMessage({ error: error.message }))
server.listen({ host: workerData.host, port: workerData.port, backlog: 1 }, () => {
  parentPort.postMessage({ listening: true })
  Atomics.wait(workerData.lock, 0, 0)
})`,
    { eval: true, workerData: { host, port, lock } },
  )
  const [message] = (await once(worker, 'message')) as [{ error?: string }]
  if (message.error !== undefined) {
    await worker.terminate()
    throw new Error(`blackhole: ${message.error}`)
  }
  // Linux queues backlog + 1 connections; two more are made for kernels that
  // queue more (those stay waiting, as the caller's will). Only the first two
  // are waited for.
  const fill: Socket[] = []
  for (let i = 0; i < 4; i++) {
    const socket = connect(port, host)
    socket.on('error', () => {})
    fill.push(socket)
  }
  await Promise.all(fill.slice(0, 2).map((socket) => once(socket, 'connect')))
  return {
    async close() {
      for (const socket of fill) socket.destroy()
      Atomics.store(lock, 0, 1)
      Atomics.notify(lock, 0)
      await worker.terminate()
    },
  }
}
