/**
 * The text of an uncompressed PDF as pdfkit writes it, read back for tests: each font's ToUnicode map (its
 * `bfrange` arrays) turns the glyph ids that its `TJ` operators show back into characters, one line a `TJ`.
 */

/** The lines of text an uncompressed pdfkit PDF shows, in page order. */
export const pdfText = (pdf: Uint8Array): ReadonlyArray<string> => {
  const raw = Buffer.from(pdf).toString("latin1")
  const objects = new Map<string, string>()
  for (const match of raw.matchAll(/(\d+) 0 obj([\s\S]*?)endobj/g)) objects.set(match[1] ?? "", match[2] ?? "")
  const maps = new Map<string, Map<number, string>>()
  for (const match of raw.matchAll(/\/(F\d+) (\d+) 0 R/g)) {
    const [, name = "", id = ""] = match
    const unicode = /\/ToUnicode (\d+) 0 R/.exec(objects.get(id) ?? "")?.[1]
    const cmap = objects.get(unicode ?? "") ?? ""
    const map = new Map<number, string>()
    for (const range of cmap.matchAll(/<([0-9a-f]+)> <[0-9a-f]+> \[([^\]]*)\]/gi)) {
      const start = parseInt(range[1] ?? "0", 16)
      ;[...(range[2] ?? "").matchAll(/<([0-9a-f]+)>/gi)].forEach((code, i) => {
        const hex = code[1] ?? ""
        const units = (hex.match(/.{4}/g) ?? []).map((unit) => parseInt(unit, 16))
        map.set(start + i, String.fromCharCode(...units))
      })
    }
    maps.set(name, map)
  }
  const lines: Array<string> = []
  let font = new Map<number, string>()
  for (const op of raw.matchAll(/\/(F\d+) [\d.]+ Tf|\[([<>0-9a-f\s.-]*)\] TJ/gi)) {
    if (op[1] !== undefined) {
      font = maps.get(op[1]) ?? new Map()
      continue
    }
    const shown = [...(op[2] ?? "").matchAll(/<([0-9a-f]*)>/gi)]
      .flatMap((hex) => (hex[1]?.match(/.{4}/g) ?? []).map((glyph) => font.get(parseInt(glyph, 16)) ?? "\uFFFD"))
      .join("")
    lines.push(shown)
  }
  return lines
}
