import { Transform, type TransformCallback } from 'node:stream'

/**
 * A coding's decoder, made when the body's first byte comes (as undici's
 * `fetch` does). A body with no byte is empty whatever its label: a decoder
 * given nothing failed "unexpected end of file", and an empty 2xx labelled
 * gzip was taken for a generation cut while it was read — charged, and not
 * asked again — where the same empty body unlabelled is asked again, free.
 * The byte also tells `deflate` as RFC 9110 has it (zlib-wrapped) from the
 * raw deflate some servers send under that name, which `fetch` and browsers
 * read (zlib's header: a CM of 8 in the first byte's low nibble).
 */
export class LazyDecoder extends Transform {
  #inner: Transform | undefined
  readonly #make: (first: Uint8Array) => Transform

  constructor(make: (first: Uint8Array) => Transform) {
    super()
    this.#make = make
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (chunk.byteLength === 0) {
      callback()
      return
    }
    let inner = this.#inner
    if (inner === undefined) {
      inner = this.#make(chunk)
      this.#inner = inner
      const made = inner
      made.on('data', (data: Buffer) => {
        if (!this.push(data)) made.pause()
      })
      made.on('error', (error: Error) => this.destroy(error))
    }
    inner.write(chunk, (error) => callback(error ?? undefined))
  }

  override _read(size: number): void {
    this.#inner?.resume()
    super._read(size)
  }

  override _flush(callback: TransformCallback): void {
    const inner = this.#inner
    if (inner === undefined) {
      callback()
      return
    }
    inner.once('end', () => callback())
    inner.end()
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#inner?.destroy()
    callback(error)
  }
}
