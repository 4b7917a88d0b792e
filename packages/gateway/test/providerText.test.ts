import { describe, expect, it } from 'vitest'
import { escapeUnprintable, providerText, quoted } from '../src/llm.js'

describe('providerText: a provider’s words as a client is shown them', () => {
  it('a URL’s credentials are blanked to the last `@` before the host: a password may hold an `@`', () => {
    expect(providerText('upstream https://admin:p@ssw0rd@proxy.internal/v1 refused', 500)).toBe(
      'upstream https://[redacted]@proxy.internal/v1 refused',
    )
    // An address after the URL is not its credentials.
    expect(providerText('see https://proxy.internal/v1?to=ops@example.com', 500)).toBe(
      'see https://proxy.internal/v1?to=ops@example.com',
    )
  })

  it('the joiners of a language or an emoji and a flag’s tags are kept; bidi controls, zero-width spaces, the BOM and controls are not', () => {
    const persian = 'می\u200cخواهم'
    const family = '👨\u200d👩\u200d👧'
    const scotland = '🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'
    expect(providerText(`${persian} ${family} ${scotland}`, 500)).toBe(
      `${persian} ${family} ${scotland}`,
    )
    expect(
      providerText(
        'a\u200eb\u200fc\u202ad\u202ee\u2066f\u2069g\u061ch\ufeffi\u0085j\u2028k\u200bl\u{e0041}m',
        500,
      ),
    ).toBe('a b c d e f g h i j k l m')
  })

  it('the escape every error message passes keeps them too; a quoted id shows each of them', () => {
    const kept =
      'می\u200cخواهم 👨\u200d👩\u200d👧 🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'
    expect(escapeUnprintable(kept)).toBe(kept)
    // A tag outside a flag is hidden ASCII: escaped, by UTF-16 unit as JSON escapes it.
    expect(escapeUnprintable('a\u202eb\ufeffc\u2066d\u200be\u{e0041}')).toBe(
      'a\\u202eb\\ufeffc\\u2066d\\u200be\\udb40\\udc41',
    )
    // A model name is an id: an invisible joiner in it is why it is unknown.
    expect(quoted('gpt\u200d-4o', 100)).toBe('"gpt\\u200d-4o"')
  })
})
