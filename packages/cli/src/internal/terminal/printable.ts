/**
 * Text that came from outside (a question, a model, a web page, a stored session) made safe to print on a terminal:
 * control characters are shown as visible symbols and never obeyed, so that no stored question or page can move the
 * cursor, ring the bell or rewrite a line. Newlines and tabs stay where a block of text is printed.
 */

/** C0 controls but tab and newline, DEL, and C1 controls. */
const controls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g

const visible = (character: string): string => {
  const code = character.charCodeAt(0)
  // C0 controls have their own pictures (U+2400 to U+241F, ␛ for ESC); DEL is ␡; C1 controls have none.
  return code < 0x20 ? String.fromCharCode(0x2400 + code) : code === 0x7f ? "\u2421" : "\ufffd"
}

/** A block of text (a report, a brief) safe to print: control characters shown, lines and tabs kept. */
export const printable = (text: string): string => text.replace(controls, visible)

/** One line safe to print: control characters shown, and line breaks too. */
export const printableLine = (text: string): string => printable(text).replace(/[\n\t]/g, " ")
