/**
 * The fonts a PDF export embeds (DejaVu, from its registry package: no download, no system font), and what they cannot
 * render. A report whose letters the font has no glyphs for (Chinese, Japanese, Korean), or that is written in a
 * right-to-left script (the PDF writer lays lines out left to right only), is refused with one sentence saying so,
 * rather than printed as empty boxes or backwards.
 */
import * as fontkit from "fontkit"
import { createRequire } from "node:module"

const require = createRequire(import.meta.url)

/** The font files, by the role they play. */
export const files = {
  regular: require.resolve("dejavu-fonts-ttf/ttf/DejaVuSans.ttf"),
  bold: require.resolve("dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf"),
  italic: require.resolve("dejavu-fonts-ttf/ttf/DejaVuSans-Oblique.ttf"),
  boldItalic: require.resolve("dejavu-fonts-ttf/ttf/DejaVuSans-BoldOblique.ttf"),
  mono: require.resolve("dejavu-fonts-ttf/ttf/DejaVuSansMono.ttf")
} as const

export const fontName = "DejaVu Sans"

let regular: fontkit.Font | undefined
const font = (): fontkit.Font => (regular ??= fontkit.openSync(files.regular))

const rightToLeft: ReadonlyArray<readonly [RegExp, string]> = [
  [/\p{Script=Arabic}/u, "Arabic"],
  [/\p{Script=Hebrew}/u, "Hebrew"],
  [/\p{Script=Syriac}/u, "Syriac"],
  [/\p{Script=Thaana}/u, "Thaana"],
  [/\p{Script=Nko}/u, "N'Ko"]
]

const cjk = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

/** Why the PDF cannot be made of this text, in one sentence; undefined when it can. */
export const refusal = (text: string): string | undefined => {
  const rtl = rightToLeft.find(([script]) => script.test(text))
  if (rtl !== undefined) {
    return (
      `A PDF cannot be made of this report: it holds text in ${rtl[1]} script, which runs right to left, and the ` +
      "PDF writer lays lines out left to right only; export it as docx or html, which carry it as it is."
    )
  }
  const missing = [...new Set(text)].filter(
    (c) => /[\p{L}\p{N}]/u.test(c) && !font().hasGlyphForCodePoint(c.codePointAt(0) ?? 0)
  )
  if (missing.length === 0) return undefined
  const which = missing.some((c) => cjk.test(c)) ? "Chinese, Japanese and Korean characters" : "some of its letters"
  return (
    `A PDF cannot be made of this report: its font (${fontName}, the only one shipped) has no glyphs for ` +
    `${which} (such as ${missing.slice(0, 3).join(" ")}); export it as docx or html, which carry it as it is.`
  )
}

/** The text with the symbols the font lacks (emoji, rare signs) as U+FFFD, which it has. */
export const printable = (text: string): string =>
  [...text].map((c) => (font().hasGlyphForCodePoint(c.codePointAt(0) ?? 0) || /\s/.test(c) ? c : "\uFFFD")).join("")
