/** Reads the pixels of an 8-bit RGB or RGBA PNG (what browsers' screenshots are), to tell a blank image from a page. */
import * as zlib from "node:zlib"

export interface Image {
  readonly width: number
  readonly height: number
  /** Each pixel as 0xRRGGBB. */
  readonly pixels: Uint32Array
}

const paeth = (a: number, b: number, c: number): number => {
  const p = a + b - c
  const pa = Math.abs(p - a)
  const pb = Math.abs(p - b)
  const pc = Math.abs(p - c)
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c
}

/** Decodes a PNG; throws on kinds it does not read (palette, 16-bit, interlaced). */
export const decode = (png: Buffer): Image => {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error("not a PNG")
  let offset = 8
  let width = 0
  let height = 0
  let channels = 0
  const data: Array<Buffer> = []
  while (offset < png.length) {
    const length = png.readUInt32BE(offset)
    const type = png.toString("ascii", offset + 4, offset + 8)
    const body = png.subarray(offset + 8, offset + 8 + length)
    if (type === "IHDR") {
      width = body.readUInt32BE(0)
      height = body.readUInt32BE(4)
      const depth = body[8]
      const color = body[9]
      if (depth !== 8 || body[12] !== 0 || (color !== 2 && color !== 6)) throw new Error("unsupported PNG kind")
      channels = color === 2 ? 3 : 4
    } else if (type === "IDAT") data.push(body)
    offset += 12 + length
  }
  const raw = zlib.inflateSync(Buffer.concat(data))
  const stride = width * channels
  const current = new Uint8Array(stride)
  const previous = new Uint8Array(stride)
  const pixels = new Uint32Array(width * height)
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)] ?? 0
    const row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1))
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? (current[x - channels] ?? 0) : 0
      const b = previous[x] ?? 0
      const c = x >= channels ? (previous[x - channels] ?? 0) : 0
      const value = row[x] ?? 0
      const predicted =
        filter === 1 ? a : filter === 2 ? b : filter === 3 ? (a + b) >> 1 : filter === 4 ? paeth(a, b, c) : 0
      current[x] = (value + predicted) & 0xff
    }
    for (let x = 0; x < width; x++) {
      const i = x * channels
      pixels[y * width + x] = ((current[i] ?? 0) << 16) | ((current[i + 1] ?? 0) << 8) | (current[i + 2] ?? 0)
    }
    previous.set(current)
  }
  return { width, height, pixels }
}

/** How many distinct colours the image holds, and the share of its most common one. */
export const colours = (image: Image): { readonly distinct: number; readonly dominantShare: number } => {
  const counts = new Map<number, number>()
  for (const pixel of image.pixels) counts.set(pixel, (counts.get(pixel) ?? 0) + 1)
  const dominant = Math.max(...counts.values())
  return { distinct: counts.size, dominantShare: dominant / image.pixels.length }
}
