/**
 * What the citation check writes into a report, in the report's language (English for the languages not listed): the
 * mark after a sentence that none of its cited sources backs, and the closing line that says how many cited sentences
 * were checked and changed. Fixed text, not the model's: it must say exactly that, in every report, at no cost.
 */

/** What the closing line counts. */
export interface Counts {
  readonly sentences: number
  readonly checked: number
  readonly changed: number
  /** Why some sentences went unchecked, when some did. */
  readonly incomplete?: "budget" | "failed" | undefined
}

interface Wording {
  readonly mark: string
  readonly line: (counts: Counts) => string
  readonly budget: string
  readonly failed: string
  /** The closing line of a report whose check was turned off. */
  readonly notChecked: string
}

const english: Wording = {
  mark: "(not supported by the cited sources)",
  line: (c) =>
    `Citation check: ${c.checked} of ${c.sentences} cited sentences were checked against their sources; ` +
    `${c.changed} ${c.changed === 1 ? "was" : "were"} changed.`,
  budget: "The budget ran out before the others were checked.",
  failed: "The others could not be checked.",
  notChecked: "Citation check: off for this report; the citations were not checked against their sources."
}

const wordings: Readonly<Record<string, Wording>> = {
  en: english,
  zh: {
    mark: "（所引来源不支持此句）",
    line: (c) =>
      `引用核查：${c.sentences} 个带引用的句子中，有 ${c.checked} 个已对照其来源核查；${c.changed} 个已修改。`,
    budget: "其余句子因预算用尽未能核查。",
    failed: "其余句子未能核查。",
    notChecked: "引用核查：本报告未开启；引用未对照其来源核查。"
  },
  ja: {
    mark: "（引用した情報源はこの文を裏付けていません）",
    line: (c) =>
      `引用の検証：引用のある ${c.sentences} 文のうち ${c.checked} 文を情報源と照合し、${c.changed} 文を修正しました。`,
    budget: "残りの文は予算が尽きたため検証されていません。",
    failed: "残りの文は検証できませんでした。",
    notChecked: "引用の検証：このレポートでは無効です。引用は情報源と照合されていません。"
  },
  ko: {
    mark: "(인용된 출처가 이 문장을 뒷받침하지 않음)",
    line: (c) =>
      `인용 검증: 인용이 있는 문장 ${c.sentences}개 중 ${c.checked}개를 출처와 대조했으며 ${c.changed}개를 수정했습니다.`,
    budget: "나머지 문장은 예산이 소진되어 검증하지 못했습니다.",
    failed: "나머지 문장은 검증할 수 없었습니다.",
    notChecked: "인용 검증: 이 보고서에서는 꺼져 있습니다. 인용은 출처와 대조되지 않았습니다."
  },
  es: {
    mark: "(no respaldado por las fuentes citadas)",
    line: (c) =>
      `Verificación de citas: se cotejaron con sus fuentes ${c.checked} de ${c.sentences} frases con citas; ` +
      `se modificaron ${c.changed}.`,
    budget: "El presupuesto se agotó antes de verificar las demás.",
    failed: "Las demás no pudieron verificarse.",
    notChecked: "Verificación de citas: desactivada en este informe; las citas no se cotejaron con sus fuentes."
  },
  fr: {
    mark: "(non étayé par les sources citées)",
    line: (c) =>
      `Vérification des citations : ${c.checked} des ${c.sentences} phrases citant une source ont été confrontées ` +
      `à leurs sources ; ${c.changed} ont été modifiées.`,
    budget: "Le budget a été épuisé avant que les autres soient vérifiées.",
    failed: "Les autres n'ont pas pu être vérifiées.",
    notChecked:
      "Vérification des citations : désactivée pour ce rapport ; les citations n'ont pas été confrontées à leurs sources."
  },
  de: {
    mark: "(von den zitierten Quellen nicht gestützt)",
    line: (c) =>
      `Zitatprüfung: ${c.checked} von ${c.sentences} Sätzen mit Quellenangabe wurden mit ihren Quellen abgeglichen; ` +
      `${c.changed} wurden geändert.`,
    budget: "Das Budget war erschöpft, bevor die übrigen geprüft wurden.",
    failed: "Die übrigen konnten nicht geprüft werden.",
    notChecked: "Zitatprüfung: für diesen Bericht ausgeschaltet; die Zitate wurden nicht mit ihren Quellen abgeglichen."
  },
  pt: {
    mark: "(não sustentado pelas fontes citadas)",
    line: (c) =>
      `Verificação de citações: ${c.checked} de ${c.sentences} frases com citações foram conferidas com as suas ` +
      `fontes; ${c.changed} foram alteradas.`,
    budget: "O orçamento esgotou-se antes de as restantes serem verificadas.",
    failed: "As restantes não puderam ser verificadas.",
    notChecked:
      "Verificação de citações: desativada neste relatório; as citações não foram conferidas com as suas fontes."
  },
  it: {
    mark: "(non supportato dalle fonti citate)",
    line: (c) =>
      `Verifica delle citazioni: ${c.checked} frasi su ${c.sentences} con citazioni sono state confrontate con le ` +
      `loro fonti; ${c.changed} sono state modificate.`,
    budget: "Il budget si è esaurito prima che le altre fossero verificate.",
    failed: "Le altre non è stato possibile verificarle.",
    notChecked:
      "Verifica delle citazioni: disattivata per questo rapporto; le citazioni non sono state confrontate con le loro fonti."
  },
  ru: {
    mark: "(не подтверждается процитированными источниками)",
    line: (c) =>
      `Проверка ссылок: ${c.checked} из ${c.sentences} предложений со ссылками сверены с источниками; ` +
      `изменено: ${c.changed}.`,
    budget: "Бюджет закончился до проверки остальных.",
    failed: "Остальные проверить не удалось.",
    notChecked: "Проверка ссылок: отключена для этого отчёта; ссылки не сверялись с источниками."
  }
}

const wordingOf = (languageCode: string): Wording => wordings[languageCode] ?? english

/** The mark after a sentence that none of its cited sources backs. */
export const unsupportedMark = (languageCode: string): string => `*${wordingOf(languageCode).mark}*`

/** Every language's mark, for the renderers that show a mark as a mark. */
export const unsupportedMarks: ReadonlyArray<string> = [english, ...Object.values(wordings)].map((w) => w.mark)

/** The closing line of a report whose check was turned off (`verify: false`): it says so, in so many words. */
export const notCheckedLine = (languageCode: string): string => `*${wordingOf(languageCode).notChecked}*`

/** The closing line of a checked report. */
export const checkLine = (languageCode: string, counts: Counts): string => {
  const wording = wordingOf(languageCode)
  const rest =
    counts.checked < counts.sentences && counts.incomplete !== undefined ? ` ${wording[counts.incomplete]}` : ""
  return `*${wording.line(counts)}${rest}*`
}
