import { frameJson } from './frameJson.js'
import { geminiGenerate } from './geminiGenerate.js'
import type { Frame, WireFormat } from './WireFormat.js'

/**
 * `streamGenerateContent` without `alt=sse`: the same chunks as the SSE
 * stream, as the elements of one JSON array written as they are generated
 * (`[{…}`, `,\r\n{…}`, …, `]`; ai.google.dev/api/generate-content
 * #method:-models.streamgeneratecontent). It was one element holding the
 * whole answer, which a client joining the chunks (text split over
 * elements, usage only in the last, the signature on one of them) never
 * had to join. An error that breaks the generation is the array's last
 * element, after the chunks generated so far.
 */
export const geminiJsonArray: WireFormat = {
  toolIdPrefix: geminiGenerate.toolIdPrefix,
  idPrefix: geminiGenerate.idPrefix,
  streamContentType: 'application/json; charset=UTF-8',
  json: geminiGenerate.json,

  frames(plan) {
    // A frame that sends nothing (a thought not asked for) is no element.
    let elements = 0
    const frames: Frame[] = geminiGenerate.frames(plan).map((frame, i) => {
      const element =
        frame.text === '' ? '' : `${elements++ === 0 ? '' : ',\r\n'}${sseData(frame.text)}`
      return { ...frame, text: `${i === 0 ? '[' : ''}${element}` }
    })
    frames.push({ text: ']' })
    return frames
  },

  errorFrame(error, plan, framesBefore) {
    const before = geminiGenerate.frames(plan).slice(0, framesBefore)
    const opening = framesBefore === 0 ? '[' : before.some((f) => f.text !== '') ? ',\r\n' : ''
    return `${opening}${frameJson(error.body)}]`
  },
}

/** The JSON of one `data: …\r\n\r\n` event of geminiGenerate's stream. */
function sseData(text: string): string {
  return text.slice('data: '.length).replace(/\r\n\r\n$/, '')
}
