/**
 * Splits a document into search chunks along its structure: headings start new sections, paragraphs are packed
 * together up to a target size, and a chunk that continues a section repeats the tail of the previous one, so a
 * passage cut at a boundary can still be found whole.
 */

/** One chunk of a document. */
export interface Chunk {
  /** The heading in effect where the chunk starts; empty before the first heading. */
  readonly heading: string
  readonly text: string
}

/** Sizes of the chunks, in characters. */
export interface ChunkSizes {
  readonly size: number
  readonly overlap: number
}

interface Block {
  readonly heading: string | undefined
  readonly text: string
}

const headingPattern = /^#{1,6}\s+(.+?)\s*#*\s*$/

const toBlocks = (text: string): ReadonlyArray<Block> =>
  text
    .replace(/\r\n?/g, "\n")
    .split(/\n\s*\n/)
    .flatMap((paragraph) => {
      // a heading line glued to its paragraph still opens a section of its own
      const lines = paragraph.split("\n")
      const blocks: Array<Block> = []
      let rest: Array<string> = []
      for (const line of lines) {
        const heading = headingPattern.exec(line.trim())?.[1]
        if (heading !== undefined) {
          if (rest.length > 0) blocks.push({ heading: undefined, text: rest.join("\n").trim() })
          rest = []
          blocks.push({ heading, text: line.trim() })
        } else rest.push(line)
      }
      if (rest.length > 0) blocks.push({ heading: undefined, text: rest.join("\n").trim() })
      return blocks
    })
    .filter((block) => block.text !== "")

/** Cuts an oversized paragraph at sentence ends (or, failing that, at spaces) into pieces of at most `size`. */
const splitLong = (text: string, size: number): ReadonlyArray<string> => {
  const pieces: Array<string> = []
  let rest = text
  while (rest.length > size) {
    const window = rest.slice(0, size)
    const sentenceEnd = Math.max(window.lastIndexOf(". "), window.lastIndexOf("! "), window.lastIndexOf("? "))
    const space = window.lastIndexOf(" ")
    const cut = sentenceEnd > size / 2 ? sentenceEnd + 1 : space > size / 2 ? space : size
    pieces.push(rest.slice(0, cut).trim())
    rest = rest.slice(cut).trim()
  }
  if (rest !== "") pieces.push(rest)
  return pieces
}

const tailOf = (text: string, overlap: number): string => {
  if (overlap <= 0 || text.length <= overlap) return overlap <= 0 ? "" : text
  const tail = text.slice(text.length - overlap)
  const space = tail.indexOf(" ")
  return (space >= 0 ? tail.slice(space + 1) : tail).trim()
}

/** The chunks of a document, in order. */
export const chunkText = (text: string, sizes: ChunkSizes): ReadonlyArray<Chunk> => {
  const chunks: Array<Chunk> = []
  let heading = ""
  let chunkHeading = ""
  let parts: Array<string> = []
  let length = 0
  let hasOwnText = false

  const emit = () => {
    if (hasOwnText) chunks.push({ heading: chunkHeading, text: parts.join("\n\n") })
    parts = []
    length = 0
    hasOwnText = false
  }
  const add = (piece: string) => {
    parts.push(piece)
    length += piece.length + 2
    hasOwnText = true
  }

  for (const block of toBlocks(text)) {
    if (block.heading !== undefined) {
      // a new section starts a new chunk unless the current one is still small
      if (length >= sizes.size / 2) emit()
      heading = block.heading
      if (!hasOwnText) chunkHeading = heading
      add(block.text)
      continue
    }
    for (const piece of splitLong(block.text, sizes.size)) {
      if (length + piece.length > sizes.size && hasOwnText) {
        const tail = tailOf(parts.join("\n\n"), sizes.overlap)
        emit()
        chunkHeading = heading
        if (tail !== "") {
          parts.push(tail)
          length = tail.length + 2
        }
      }
      if (!hasOwnText && parts.length === 0) chunkHeading = heading
      add(piece)
    }
  }
  emit()
  return chunks
}
