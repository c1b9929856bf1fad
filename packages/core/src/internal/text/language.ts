/**
 * The language of a question, told from its script (and, for Latin-script languages, its most common words), so that
 * the report is written in the language the user asked in.
 */

/** A language the report can be written in. */
export interface Language {
  /** ISO 639-1 code, e.g. `zh`. */
  readonly code: string
  /** English name, e.g. `Chinese`. */
  readonly name: string
  /** The language's own name, e.g. `中文`. */
  readonly nativeName: string
  /** False when the text gave little evidence (short Latin-script text); a model's guess may then be better. */
  readonly confident: boolean
}

interface Known {
  readonly code: string
  readonly name: string
  readonly nativeName: string
  readonly sourcesHeading: string
}

const englishEntry: Known = { code: "en", name: "English", nativeName: "English", sourcesHeading: "Sources" }

const known: ReadonlyArray<Known> = [
  englishEntry,
  { code: "zh", name: "Chinese", nativeName: "中文", sourcesHeading: "参考来源" },
  { code: "ja", name: "Japanese", nativeName: "日本語", sourcesHeading: "出典" },
  { code: "ko", name: "Korean", nativeName: "한국어", sourcesHeading: "출처" },
  { code: "ru", name: "Russian", nativeName: "русский", sourcesHeading: "Источники" },
  { code: "uk", name: "Ukrainian", nativeName: "українська", sourcesHeading: "Джерела" },
  { code: "ar", name: "Arabic", nativeName: "العربية", sourcesHeading: "المصادر" },
  { code: "he", name: "Hebrew", nativeName: "עברית", sourcesHeading: "מקורות" },
  { code: "el", name: "Greek", nativeName: "Ελληνικά", sourcesHeading: "Πηγές" },
  { code: "th", name: "Thai", nativeName: "ไทย", sourcesHeading: "แหล่งที่มา" },
  { code: "hi", name: "Hindi", nativeName: "हिन्दी", sourcesHeading: "स्रोत" },
  { code: "es", name: "Spanish", nativeName: "español", sourcesHeading: "Fuentes" },
  { code: "fr", name: "French", nativeName: "français", sourcesHeading: "Sources" },
  { code: "de", name: "German", nativeName: "Deutsch", sourcesHeading: "Quellen" },
  { code: "pt", name: "Portuguese", nativeName: "português", sourcesHeading: "Fontes" },
  { code: "it", name: "Italian", nativeName: "italiano", sourcesHeading: "Fonti" },
  { code: "nl", name: "Dutch", nativeName: "Nederlands", sourcesHeading: "Bronnen" }
]

const byCode = new Map(known.map((k) => [k.code, k] as const))

const language = (code: string, confident: boolean): Language => {
  const entry = byCode.get(code) ?? englishEntry
  return { code: entry.code, name: entry.name, nativeName: entry.nativeName, confident }
}

/** English, the fallback. */
export const english: Language = language("en", false)

const scripts: ReadonlyArray<readonly [string, RegExp]> = [
  ["han", /\p{Script=Han}/u],
  ["kana", /[\p{Script=Hiragana}\p{Script=Katakana}]/u],
  ["hangul", /\p{Script=Hangul}/u],
  ["cyrillic", /\p{Script=Cyrillic}/u],
  ["arabic", /\p{Script=Arabic}/u],
  ["hebrew", /\p{Script=Hebrew}/u],
  ["greek", /\p{Script=Greek}/u],
  ["thai", /\p{Script=Thai}/u],
  ["devanagari", /\p{Script=Devanagari}/u],
  ["latin", /\p{Script=Latin}/u]
]

// Frequent short words that mark a Latin-script language; a question needs two of them to be told apart.
const stopwords: Readonly<Record<string, ReadonlySet<string>>> = {
  en: new Set("the of and to in is are what how why which does do for with on between vs best should can".split(" ")),
  es: new Set("el la los las de del que y en es son cómo qué por para con una entre cuál cuáles".split(" ")),
  fr: new Set("le la les des du de et est sont comment quel quelle quels pour avec une dans entre pourquoi".split(" ")),
  de: new Set("der die das und ist sind wie was warum welche für mit ein eine zwischen den dem nicht".split(" ")),
  pt: new Set("o a os as de do da que e é são como qual quais para com uma entre por não".split(" ")),
  it: new Set("il lo la gli le di del della che e è sono come quale quali per con una tra perché".split(" ")),
  nl: new Set("de het een en is zijn hoe wat waarom welke voor met tussen van niet".split(" "))
}

const ukrainianLetters = /[ієїґ]/iu

/** Tells the language of a text. Non-Latin scripts are decided by their letters; Latin script by common words. */
export const detect = (text: string): Language => {
  const counts = new Map<string, number>()
  let letters = 0
  for (const char of text) {
    if (!/\p{L}/u.test(char)) continue
    letters++
    for (const [name, pattern] of scripts) {
      if (pattern.test(char)) {
        counts.set(name, (counts.get(name) ?? 0) + 1)
        break
      }
    }
  }
  if (letters === 0) return english
  const share = (name: string) => (counts.get(name) ?? 0) / letters
  // Kana only occur in Japanese; Han alone is Chinese. A few CJK characters among Latin words (product names in
  // English) do not make a Chinese question, but CJK text with Latin names in it (`Rust 和 Go 的区别`) does.
  if ((counts.get("kana") ?? 0) > 0 && share("kana") + share("han") >= 0.2) return language("ja", true)
  if (share("hangul") >= 0.2) return language("ko", true)
  if (share("han") >= 0.2) return language("zh", true)
  if (share("cyrillic") >= 0.3) return language(ukrainianLetters.test(text) ? "uk" : "ru", true)
  if (share("arabic") >= 0.3) return language("ar", true)
  if (share("hebrew") >= 0.3) return language("he", true)
  if (share("greek") >= 0.3) return language("el", true)
  if (share("thai") >= 0.3) return language("th", true)
  if (share("devanagari") >= 0.3) return language("hi", true)
  const words = text.toLowerCase().split(/[^\p{L}]+/u)
  let best = "en"
  let bestScore = 0
  let secondScore = 0
  for (const [code, set] of Object.entries(stopwords)) {
    const score = words.reduce((n, w) => (set.has(w) ? n + 1 : n), 0)
    if (score > bestScore) {
      secondScore = bestScore
      bestScore = score
      best = code
    } else if (score > secondScore) {
      secondScore = score
    }
  }
  return language(best, bestScore >= 2 && bestScore > secondScore)
}

/** The language a brief names (`Chinese`, `中文`, `zh`, `español`), if it is one we know. */
export const fromName = (name: string): Language | undefined => {
  const wanted = name.trim().toLowerCase()
  if (wanted === "") return undefined
  const entry = known.find(
    (k) =>
      k.code === wanted ||
      k.name.toLowerCase() === wanted ||
      k.nativeName.toLowerCase() === wanted ||
      wanted.startsWith(k.name.toLowerCase())
  )
  return entry === undefined ? undefined : language(entry.code, true)
}

/** The language a user names for the report (`de`, `German`, `Deutsch`); one we do not know is taken as named. */
export const named = (name: string): Language => {
  const trimmed = name.trim()
  return fromName(trimmed) ?? { code: trimmed.toLowerCase(), name: trimmed, nativeName: trimmed, confident: true }
}

/**
 * The language of the report: the question's, when its text says so clearly; else the brief's (the brief model read
 * the whole exchange); else the question's best guess.
 */
export const forReport = (question: string, briefLanguage: string | undefined): Language => {
  const detected = detect(question)
  if (detected.confident) return detected
  const named = briefLanguage === undefined ? undefined : fromName(briefLanguage)
  return named ?? detected
}

/** The instruction that makes the report model write in the report's language (the question's unless set). */
export const reportInstruction = (language: Language): string => {
  switch (language.code) {
    case "en":
      return "Write the entire report in English."
    case "zh":
      return (
        "Write the entire report in Chinese (中文): title, headings, prose, tables " +
        "and conclusions. Keep names, titles of sources and direct quotations in their original language. " +
        "请用中文撰写整篇报告。"
      )
    case "ja":
      return (
        "Write the entire report in Japanese (日本語). Keep names, titles of sources " +
        "and direct quotations in their original language. 報告書はすべて日本語で書いてください。"
      )
    default:
      return (
        `Write the entire report in ${language.name}${language.nativeName === language.name ? "" : ` (${language.nativeName})`}: ` +
        "title, headings, prose, tables and conclusions. Keep names, titles of sources and direct quotations in " +
        "their original language. Do not switch to English because the sources are in English."
      )
  }
}

/** The heading of the numbered source list, in the report's language. */
export const sourcesHeading = (language: Language): string => byCode.get(language.code)?.sourcesHeading ?? "Sources"
