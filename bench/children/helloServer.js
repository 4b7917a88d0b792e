// Express hello-world in one of three shapes, on 127.0.0.1 port 0:
// `bare`, `hourglass` (deadline() in front) or `connect-timeout`.
import { deadline } from '@hourglass/express'
import timeout from 'connect-timeout'
import express from 'express'
import { announceReady } from '../lib/child.js'

const variant = process.argv[2]
const app = express()
app.disable('x-powered-by')
if (variant === 'hourglass') app.use(deadline({ defaultMs: 5000 }))
else if (variant === 'connect-timeout') app.use(timeout('5s'))
else if (variant !== 'bare') throw new Error(`unknown variant ${variant}`)
app.get('/', (_req, res) => {
  res.send('Hello World!')
})
const server = app.listen(0, '127.0.0.1', () => announceReady({ port: server.address().port }))
