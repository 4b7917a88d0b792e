// Test support (clientMistakes.test.ts), loaded with `node --import` before
// the example: its fake provider spends every answer's cap before a word (a
// reasoning model thinking to max_tokens: blank lines at most), and before the example's own
// requests, the model service is sent what a careless client could send —
// malformed JSON, a body over express.json's 100 kB, a charset it does not
// read — each answer printed as a `PROBE` line. Its own requests get a
// roomier budget (below).
import http from 'node:http'
import { FakeProvider, reply } from '@hourglass/testkit'
import express from 'express'

const start = FakeProvider.start
FakeProvider.start = async function (...args) {
  const provider = await start.apply(this, args)
  return provider.setReply(reply.text('\n\n', { finishReason: 'length' }))
}

// The example's requests carry 5 s instead of 1 s (its printed "budget 1000
// ms" stays). A 502 here needs the model service to finish callModel's
// recovery — 4 provider calls — within the API's model slice, 70 % of the
// budget: ~700 ms of 1 s. A fresh process does that in ~250–450 ms idle,
// but took up to 716 ms with the box loaded, and a loaded CI run ran the
// slice out: a 504, the answer this test is not about. 5 s gives the slice
// 3.5 s, about 5× that; no answer waits for it (each comes when the 4 calls
// end), and a budget that did run out would still answer both requests
// (2 × 5 s) before the test kills the run at 20 s.
const send = globalThis.fetch
globalThis.fetch = function (url, init = {}) {
  return send.call(this, url, {
    ...init,
    headers: { ...init.headers, 'x-deadline-remaining-ms': '5000' },
  })
}

const post = (url, body, contentType = 'application/json') =>
  new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': contentType } },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk) => (text += chunk))
        res.on('end', () => resolve(`${res.statusCode} ${text}`))
      },
    )
    req.on('error', reject)
    req.end(body)
  })

async function probe(name, path, url) {
  const at = `${url}${path}`
  console.log(`PROBE ${name} malformed JSON: ${await post(at, '{"prompt": ')}`)
  console.log(
    `PROBE ${name} 200 kB body: ${await post(at, JSON.stringify({ prompt: 'x'.repeat(200_000) }))}`,
  )
  console.log(
    `PROBE ${name} koi8-r charset: ${await post(at, '{"prompt":"hi"}', 'application/json; charset=koi8-r')}`,
  )
}

// The model service is the first app the example starts, the edge the
// third: each probed as it listens, before the example is told it does (so
// before its own requests).
const probes = [
  async (url) => {
    await probe('model', '/generate', url)
    console.log(`PROBE model no prompt: ${await post(`${url}/generate`, '{}')}`)
  },
  undefined,
  async (url) => {
    await probe('edge', '/ask', url)
    console.log(`PROBE edge no question: ${await post(`${url}/ask`, '{}')}`)
    console.log(`PROBE edge blank question: ${await post(`${url}/ask`, '{"question":" \\n\\t "}')}`)
    console.log(
      `PROBE edge text body: ${await post(`${url}/ask`, 'Why is the sky blue?', 'text/plain')}`,
    )
  },
]
const listen = express.application.listen
let started = 0
express.application.listen = function (...args) {
  const told = typeof args.at(-1) === 'function' ? args.pop() : () => {}
  const run = probes[started++]
  if (run === undefined) return listen.call(this, ...args, told)
  const server = listen.call(this, ...args, () => {
    run(`http://127.0.0.1:${server.address().port}`).then(told, (error) => {
      console.error(error)
      process.exit(1)
    })
  })
  return server
}
