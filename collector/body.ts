// A fetched body turned into the JSON text the collector serves, at a bounded cost. The byte cap
// alone does not bound it: below 1 MiB, `[{},{},…]` parses into ~350,000 objects (~21 MiB of heap),
// and 10,000 nested arrays parse fine but overflow the stack of every later JSON.stringify (which
// made GET /responses answer 500 for everyone). So the bytes are scanned first, without parsing,
// for nesting depth and the number of values, and only a body within both limits is parsed; it is
// re-serialised at once (compact) and the parsed value dropped, so what a resource keeps is its
// text, which must also fit the byte cap (invalid UTF-8 decodes to U+FFFD, 3 bytes for 1).
import type { FetchError } from './fetcher.ts';

export interface JsonLimits {
  /** Deepest nesting of arrays and objects (serde_json's default, which star's parser had). */
  maxDepth: number;
  /** Most values (containers and separated elements) in one body. */
  maxValues: number;
  /** Largest serialised text kept. */
  maxBytes: number;
}

export const MAX_DEPTH = 128;

/**
 * The limits for a byte cap: at most one value per 10 bytes of it (104,857 at 1 MiB; a probe's
 * /status of that size holds about 48,000), so a parsed body costs at most a few times the cap.
 */
export function limitsFor(maxBodyBytes: number): JsonLimits {
  return { maxDepth: MAX_DEPTH, maxValues: Math.max(1000, Math.floor(maxBodyBytes / 10)), maxBytes: maxBodyBytes };
}

/** What each byte is to the scanner: 0 nothing, else one of these. */
const QUOTE = 1;
const BACKSLASH = 2;
const OPEN = 3;
const CLOSE = 4;
const COMMA = 5;
const CLASS = new Uint8Array(256);
CLASS[0x22] = QUOTE;
CLASS[0x5c] = BACKSLASH;
CLASS[0x5b] = OPEN;
CLASS[0x7b] = OPEN;
CLASS[0x5d] = CLOSE;
CLASS[0x7d] = CLOSE;
CLASS[0x2c] = COMMA;

/**
 * Scans JSON bytes for structure only: outside strings, every `[`/`{` opens a level and counts as
 * a value, every `,` separates one more; inside strings, a backslash escapes the next byte. UTF-8
 * continuation bytes are never ASCII, so no multi-byte character can look like punctuation. Not a
 * validator: JSON.parse decides that afterwards. (A byte-class table over a plain Uint8Array view
 * measured fastest here, about a fifth of what JSON.parse and JSON.stringify take.)
 */
export function measureJson(buffer: Uint8Array, limits: Pick<JsonLimits, 'maxDepth' | 'maxValues'>): FetchError | undefined {
  const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const n = bytes.length;
  let depth = 0;
  let values = 0;
  let i = 0;
  while (i < n) {
    const c = CLASS[bytes[i]!];
    i++;
    if (c === 0) continue;
    if (c === QUOTE) {
      while (i < n) {
        const d = CLASS[bytes[i]!];
        if (d === QUOTE) break;
        i += d === BACKSLASH ? 2 : 1;
      }
      i++;
    } else if (c === OPEN) {
      if (++depth > limits.maxDepth) return { reason: 'too-deep', message: `JSON nested deeper than ${limits.maxDepth} levels` };
      if (++values > limits.maxValues) return tooMany(limits.maxValues);
    } else if (c === CLOSE) depth--;
    else if (c === COMMA && ++values > limits.maxValues) return tooMany(limits.maxValues);
  }
  return undefined;
}

function tooMany(max: number): FetchError {
  return { reason: 'too-large', message: `JSON holds more than ${max} values` };
}

/** Invalid UTF-8 becomes U+FFFD rather than an error; decode() without `stream` keeps no state between calls. */
const UTF8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false });

/** The body as compact JSON text within the limits, or why there is none. */
export function jsonText(bytes: Buffer, limits: JsonLimits): { text: string; error: null } | { text: null; error: FetchError } {
  const tooComplex = measureJson(bytes, limits);
  if (tooComplex) return { text: null, error: tooComplex };
  const decoded = UTF8.decode(bytes);
  if (decoded.trim() === '') return { text: null, error: { reason: 'not-json', message: 'empty body' } };
  let text: string;
  try {
    text = JSON.stringify(JSON.parse(decoded));
  } catch (err) {
    const snippet = decoded.slice(0, 60).replace(/\s+/g, ' ');
    return {
      text: null,
      error: { reason: 'not-json', message: `body is not JSON (${(err as Error).message}): ${JSON.stringify(snippet)}${decoded.length > 60 ? '…' : ''}` },
    };
  }
  if (Buffer.byteLength(text) > limits.maxBytes)
    return { text: null, error: { reason: 'too-large', message: `body is larger than the ${limits.maxBytes}-byte limit once decoded` } };
  return { text, error: null };
}
