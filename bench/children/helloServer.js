// Express hello-world in one of these shapes, on 127.0.0.1 port 0:
// `bare`, `hourglass` (deadline() in front), `connect-timeout`, `als` (only an
// AsyncLocalStorage.run around the chain), or `floor`: the least any deadline
// middleware does per request — one AsyncLocalStorage.run, one timer armed
// and cleared, one `finish` listener.
import { AsyncLocalStorage } from 'node:async_hooks'
import { deadline } from '@hourglass/express'
import timeout from 'connect-timeout'
import express from 'express'
import { announceReady } from '../lib/child.js'

const variant = process.argv[2]
const app = express()
app.disable('x-powered-by')
if (variant === 'hourglass') app.use(deadline({ defaultMs: 5000 }))
else if (variant === 'connect-timeout') app.use(timeout('5s'))
else if (variant === 'als') {
  const als = new AsyncLocalStorage()
  app.use((_req, _res, next) => als.run({}, next))
} else if (variant === 'floor') {
  const als = new AsyncLocalStorage()
  app.use((_req, res, next) => {
    const timer = setTimeout(() => {}, 5000)
    timer.unref()
    res.once('finish', () => clearTimeout(timer))
    als.run({}, next)
  })
} else if (variant !== 'bare') throw new Error(`unknown variant ${variant}`)
app.get('/', (_req, res) => {
  res.send('Hello World!')
})
const server = app.listen(0, '127.0.0.1', () => announceReady({ port: server.address().port }))
