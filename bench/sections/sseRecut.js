import { SseRecutter } from '@hourglass/gateway'
import { fmt, ratioText, row, verdict } from '../lib/report.js'
import { interleave, median } from '../lib/stats.js'

const VARIANTS = ['recutter-stream', 'textdecoder-lines', 'recutter-push']
const WORDS = [
  'Hello',
  ' 世界',
  ' مرحبا',
  ' 👋🏽',
  ' naïve',
  ' سلام',
  ' 你好吗',
  ' café',
  ' 🚀',
  ' deadline',
]

/** An OpenAI-style SSE stream, multi-byte text in every event, cut into chunks of 1…2048 bytes. */
function makeInput(totalBytes) {
  let seed = 7
  const rand = (n) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed % n
  }
  const events = []
  let size = 0
  while (size < totalBytes) {
    const content = Array.from({ length: 1 + rand(6) }, () => WORDS[rand(WORDS.length)]).join('')
    const event = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}]}\n\n`
    events.push(event)
    size += Buffer.byteLength(event)
  }
  events.push('data: [DONE]\n\n')
  const bytes = Buffer.from(events.join(''))
  const chunks = []
  for (let at = 0; at < bytes.length; ) {
    const n = 1 + rand(2048)
    chunks.push(new Uint8Array(bytes.subarray(at, at + n)))
    at += n
  }
  return { bytes, chunks, events: events.length }
}

const source = (chunks) =>
  new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c)
      controller.close()
    },
  })

function lineSplitter() {
  let rest = ''
  return new TransformStream({
    transform(text, controller) {
      const lines = (rest + text).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) controller.enqueue(line)
    },
    flush(controller) {
      if (rest) controller.enqueue(rest)
    },
  })
}

function recutterStream() {
  const recutter = new SseRecutter()
  return new TransformStream({
    transform(chunk, controller) {
      const out = recutter.push(chunk)
      if (out) controller.enqueue(out)
    },
    flush(controller) {
      const out = recutter.end()
      if (out) controller.enqueue(out)
    },
  })
}

async function drain(stream) {
  let count = 0
  for await (const _ of stream) count++
  return count
}

const runs = {
  'recutter-stream': (chunks) => drain(source(chunks).pipeThrough(recutterStream())),
  'textdecoder-lines': (chunks) =>
    drain(source(chunks).pipeThrough(new TextDecoderStream()).pipeThrough(lineSplitter())),
  'recutter-push': async (chunks) => {
    const recutter = new SseRecutter()
    let count = 0
    for (const c of chunks) if (recutter.push(c)) count++
    if (recutter.end()) count++
    return count
  },
}

const countFffd = (text) => {
  let n = 0
  for (const ch of text) if (ch === '\uFFFD') n++
  return n
}

/** Item 8: SSE re-cutting throughput, and U+FFFD in what a client decodes chunk by chunk. */
export async function run({ quick, log }) {
  const input = makeInput(quick ? 512 * 1024 : 8 * 1024 * 1024)
  const mb = input.bytes.length / 1e6
  const rounds = quick ? 2 : 9
  for (const v of VARIANTS) await runs[v](input.chunks) // warm-up
  const results = await interleave(VARIANTS, rounds, async (variant) => {
    const t = performance.now()
    await runs[variant](input.chunks)
    return mb / ((performance.now() - t) / 1000)
  })
  log(`sse: ${VARIANTS.map((v) => `${v} ${fmt(median(results[v]), 1)} MB/s`).join(', ')}`)

  // Correctness, outside the timing: decode every emitted chunk on its own, as many clients do.
  const recutOut = []
  await source(input.chunks)
    .pipeThrough(recutterStream())
    .pipeTo(new WritableStream({ write: (c) => void recutOut.push(c) }))
  const oursFffd = recutOut.reduce((n, c) => n + countFffd(new TextDecoder().decode(c)), 0)
  const oursIntact = Buffer.concat(recutOut).equals(input.bytes)
  const naiveFffd = input.chunks.reduce((n, c) => n + countFffd(new TextDecoder().decode(c)), 0)
  const peerLines = []
  await source(input.chunks)
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(lineSplitter())
    .pipeTo(new WritableStream({ write: (l) => void peerLines.push(l) }))
  const peerFffd = peerLines.reduce((n, l) => n + countFffd(l), 0)

  const ours = median(results['recutter-stream'])
  const peer = median(results['textdecoder-lines'])
  const push = median(results['recutter-push'])
  return {
    id: '8',
    title: 'SSE re-assembly',
    setup:
      `${fmt(mb, 1)} MB of OpenAI-style \`data:\` events (${fmt(input.events)} events, Chinese, Arabic, Persian, ` +
      `accented Latin and emoji in every one) cut into ${fmt(input.chunks.length)} chunks of 1–2,048 bytes, so ` +
      'characters and events are split across chunks. Ours: `SseRecutter` (what the gateway forwards SSE through) in a ' +
      '`TransformStream`, bytes out on whole-event boundaries. Peer: `TextDecoderStream` + a line-splitting ' +
      '`TransformStream`, text lines out. Same in-memory `ReadableStream` source; MB/s of input; ' +
      `${rounds} interleaved rounds, medians. U+FFFD: every chunk ours emits decoded on its own with a fresh ` +
      "`TextDecoder` (what a client that does not stream-decode sees); the peer's lines as produced.",
    rows: [
      row({
        measure: 'throughput (MB/s), both as web streams',
        peerName: '`TextDecoderStream` + line splitter',
        peer: fmt(peer, 1),
        ours: fmt(ours, 1),
        ratio: ratioText(ours, peer),
      }),
      row({
        measure: 'throughput (MB/s), ours as a plain `push()` loop',
        peerName: '`TextDecoderStream` + line splitter',
        peer: fmt(peer, 1),
        ours: fmt(push, 1),
        ratio: ratioText(push, peer),
      }),
      row({
        measure: 'U+FFFD in the output',
        peerName: '`TextDecoderStream` + line splitter',
        peer: fmt(peerFffd),
        ours: fmt(oursFffd),
        ratio: '—',
        target: 'ours = 0, bytes unchanged',
        verdict: verdict(oursFffd === 0 && oursIntact),
      }),
      row({
        measure: 'U+FFFD when the input chunks are decoded one by one (no re-cutting)',
        peerName: '`new TextDecoder().decode(chunk)` per chunk',
        peer: fmt(naiveFffd),
        ours: fmt(oursFffd),
        ratio: '—',
      }),
    ],
    notes: [
      `Ours forwarded the input ${oursIntact ? 'byte for byte' : '**with changes**'} (${fmt(recutOut.length)} chunks out).`,
    ],
  }
}
