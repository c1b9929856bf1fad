/**
 * SHA-256 of a string, in plain TypeScript: core runs where neither Node's `crypto` nor a synchronous Web Crypto
 * digest is available, and a 32-bit `Hash` is too small to stand for a text in a journal kept across runs.
 */

const roundConstants = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
])

const initialState = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]

/**
 * The text as UTF-8 bytes. A lone surrogate is written as its own three bytes (WTF-8) rather than as U+FFFD, so that
 * two different strings never give the same bytes.
 */
const utf8 = (text: string): Uint8Array => {
  const bytes = new Uint8Array(text.length * 3)
  let n = 0
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i)
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00)
        i++
      }
    }
    if (code < 0x80) {
      bytes[n++] = code
    } else if (code < 0x800) {
      bytes[n++] = 0xc0 | (code >>> 6)
      bytes[n++] = 0x80 | (code & 0x3f)
    } else if (code < 0x10000) {
      bytes[n++] = 0xe0 | (code >>> 12)
      bytes[n++] = 0x80 | ((code >>> 6) & 0x3f)
      bytes[n++] = 0x80 | (code & 0x3f)
    } else {
      bytes[n++] = 0xf0 | (code >>> 18)
      bytes[n++] = 0x80 | ((code >>> 12) & 0x3f)
      bytes[n++] = 0x80 | ((code >>> 6) & 0x3f)
      bytes[n++] = 0x80 | (code & 0x3f)
    }
  }
  return bytes.subarray(0, n)
}

/** The message padded to whole 64-byte blocks, its length in bits at the end. */
const padded = (message: Uint8Array): Uint8Array => {
  const blocks = Math.ceil((message.length + 9) / 64)
  const bytes = new Uint8Array(blocks * 64)
  bytes.set(message)
  bytes[message.length] = 0x80
  const view = new DataView(bytes.buffer)
  const bits = message.length * 8
  view.setUint32(bytes.length - 8, Math.floor(bits / 0x100000000))
  view.setUint32(bytes.length - 4, bits >>> 0)
  return bytes
}

const rotateRight = (x: number, n: number): number => (x >>> n) | (x << (32 - n))

const compress = (state: Array<number>, view: DataView, offset: number, words: Uint32Array): void => {
  for (let t = 0; t < 16; t++) words[t] = view.getUint32(offset + t * 4)
  for (let t = 16; t < 64; t++) {
    const w15 = words[t - 15] ?? 0
    const w2 = words[t - 2] ?? 0
    const s0 = rotateRight(w15, 7) ^ rotateRight(w15, 18) ^ (w15 >>> 3)
    const s1 = rotateRight(w2, 17) ^ rotateRight(w2, 19) ^ (w2 >>> 10)
    words[t] = ((words[t - 16] ?? 0) + s0 + (words[t - 7] ?? 0) + s1) | 0
  }
  let [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0] = state
  for (let t = 0; t < 64; t++) {
    const s1 = rotateRight(e, 6) ^ rotateRight(e, 11) ^ rotateRight(e, 25)
    const choice = (e & f) ^ (~e & g)
    const t1 = (h + s1 + choice + (roundConstants[t] ?? 0) + (words[t] ?? 0)) | 0
    const s0 = rotateRight(a, 2) ^ rotateRight(a, 13) ^ rotateRight(a, 22)
    const majority = (a & b) ^ (a & c) ^ (b & c)
    const t2 = (s0 + majority) | 0
    h = g
    g = f
    f = e
    e = (d + t1) | 0
    d = c
    c = b
    b = a
    a = (t1 + t2) | 0
  }
  const next = [a, b, c, d, e, f, g, h]
  for (let i = 0; i < 8; i++) state[i] = ((state[i] ?? 0) + (next[i] ?? 0)) | 0
}

/** The SHA-256 digest of a text's UTF-8 bytes, as 64 lower-case hex digits. */
export const sha256Hex = (text: string): string => {
  const bytes = padded(utf8(text))
  const view = new DataView(bytes.buffer)
  const state = [...initialState]
  const words = new Uint32Array(64)
  for (let offset = 0; offset < bytes.length; offset += 64) compress(state, view, offset, words)
  return state.map((word) => (word >>> 0).toString(16).padStart(8, "0")).join("")
}
