/**
 * The part of fontkit (which pdfkit lays text out with) that the PDF export uses to tell what its font can render;
 * fontkit ships no types of its own.
 */
declare module "fontkit" {
  export interface Font {
    readonly familyName: string
    hasGlyphForCodePoint(codePoint: number): boolean
  }
  export function openSync(path: string): Font
}
