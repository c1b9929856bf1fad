/**
 * The fixed notices a report can open with, in the common languages (English for the others): that it rests on no
 * source and why, or that the budget could not pay for a report and what stands instead. Written here rather than by
 * the report model: a notice about how the run went must be there, say exactly that and nothing more, whatever the
 * model (which may not write the language well, or leave the notice out); a table costs no call and no tokens.
 */

/** Why a run found or read no source. */
export type NoSourceReason =
  "no_tool_call" | "searches_failed" | "nothing_found" | "research_failed" | "budget" | "policy"

interface Wording {
  /** Opens the no-source notice. */
  readonly noSource: string
  readonly reasons: Readonly<Record<NoSourceReason, string>>
  /** Closes the no-source notice. */
  readonly unsupported: string
  /** Opens a report the budget could not pay for. */
  readonly budgetShort: string
}

const english: Wording = {
  noSource: "No source was found or read for this report.",
  reasons: {
    no_tool_call: "The research model never called a search tool.",
    searches_failed: "Every search and page extraction failed.",
    nothing_found: "The searches found nothing relevant to the question.",
    research_failed: "Every research step failed before it read a source.",
    budget: "The budget ran out before any source was read.",
    policy: "The source policy removed everything the searches found."
  },
  unsupported: "What follows rests on the model's own knowledge, not on research: check it before relying on it.",
  budgetShort:
    "The budget could not pay for writing a report of useful length, so what follows are the research findings as " +
    "they were gathered, unedited, with their sources."
}

const wordings: Readonly<Record<string, Wording>> = {
  en: english,
  zh: {
    noSource: "本报告没有找到或阅读任何来源。",
    reasons: {
      no_tool_call: "研究模型从未调用搜索工具。",
      searches_failed: "所有搜索和网页提取均已失败。",
      nothing_found: "搜索没有找到与问题相关的内容。",
      research_failed: "所有研究步骤在阅读来源之前均已失败。",
      budget: "预算在阅读任何来源之前已用尽。",
      policy: "来源策略排除了搜索找到的所有内容。"
    },
    unsupported: "以下内容基于模型自身的知识，而非研究结果：使用前请先核实。",
    budgetShort: "预算不足以撰写一份有实用篇幅的报告，因此以下是按收集时原样列出的研究发现及其来源，未经编辑。"
  },
  ja: {
    noSource: "このレポートのために見つかった、または読まれた情報源はありません。",
    reasons: {
      no_tool_call: "調査モデルは検索ツールを一度も呼び出しませんでした。",
      searches_failed: "すべての検索とページ抽出が失敗しました。",
      nothing_found: "検索では質問に関連するものが見つかりませんでした。",
      research_failed: "すべての調査ステップが情報源を読む前に失敗しました。",
      budget: "情報源を読む前に予算が尽きました。",
      policy: "検索で見つかったものはすべて情報源ポリシーにより除外されました。"
    },
    unsupported: "以下の内容は調査ではなくモデル自身の知識に基づいています。利用する前に確認してください。",
    budgetShort:
      "予算が十分な長さのレポートを書くのに足りなかったため、以下は収集されたままの調査結果とその出典です（未編集）。"
  },
  ko: {
    noSource: "이 보고서를 위해 찾거나 읽은 출처가 없습니다.",
    reasons: {
      no_tool_call: "연구 모델이 검색 도구를 한 번도 호출하지 않았습니다.",
      searches_failed: "모든 검색과 페이지 추출이 실패했습니다.",
      nothing_found: "검색에서 질문과 관련된 내용을 찾지 못했습니다.",
      research_failed: "모든 연구 단계가 출처를 읽기 전에 실패했습니다.",
      budget: "출처를 읽기 전에 예산이 소진되었습니다.",
      policy: "출처 정책이 검색으로 찾은 모든 것을 제외했습니다."
    },
    unsupported: "아래 내용은 연구가 아니라 모델 자체의 지식에 근거합니다. 의존하기 전에 확인하십시오.",
    budgetShort:
      "예산이 쓸 만한 분량의 보고서를 작성하기에 부족하여, 아래는 수집된 그대로의 연구 결과와 그 출처입니다(편집되지 않음)."
  },
  es: {
    noSource: "No se encontró ni se leyó ninguna fuente para este informe.",
    reasons: {
      no_tool_call: "El modelo de investigación nunca llamó a una herramienta de búsqueda.",
      searches_failed: "Todas las búsquedas y extracciones de páginas fallaron.",
      nothing_found: "Las búsquedas no encontraron nada relevante para la pregunta.",
      research_failed: "Todos los pasos de investigación fallaron antes de leer una fuente.",
      budget: "El presupuesto se agotó antes de leer ninguna fuente.",
      policy: "La política de fuentes excluyó todo lo que encontraron las búsquedas."
    },
    unsupported:
      "Lo que sigue se basa en el conocimiento propio del modelo, no en una investigación: verifíquelo antes de confiar en ello.",
    budgetShort:
      "El presupuesto no alcanzó para redactar un informe de extensión útil, así que lo que sigue son los hallazgos de " +
      "la investigación tal como se recopilaron, sin editar, con sus fuentes."
  },
  fr: {
    noSource: "Aucune source n'a été trouvée ni lue pour ce rapport.",
    reasons: {
      no_tool_call: "Le modèle de recherche n'a jamais appelé d'outil de recherche.",
      searches_failed: "Toutes les recherches et extractions de pages ont échoué.",
      nothing_found: "Les recherches n'ont rien trouvé de pertinent pour la question.",
      research_failed: "Toutes les étapes de recherche ont échoué avant de lire une source.",
      budget: "Le budget a été épuisé avant qu'aucune source ne soit lue.",
      policy: "La politique de sources a écarté tout ce que les recherches ont trouvé."
    },
    unsupported:
      "Ce qui suit repose sur les connaissances propres du modèle, non sur une recherche : vérifiez-le avant de vous y fier.",
    budgetShort:
      "Le budget ne suffisait pas pour rédiger un rapport d'une longueur utile : voici donc les résultats de la recherche " +
      "tels qu'ils ont été recueillis, sans retouche, avec leurs sources."
  },
  de: {
    noSource: "Für diesen Bericht wurde keine Quelle gefunden oder gelesen.",
    reasons: {
      no_tool_call: "Das Recherchemodell hat nie ein Suchwerkzeug aufgerufen.",
      searches_failed: "Alle Suchen und Seitenabrufe sind fehlgeschlagen.",
      nothing_found: "Die Suchen haben nichts gefunden, das für die Frage relevant ist.",
      research_failed: "Alle Rechercheschritte sind gescheitert, bevor eine Quelle gelesen wurde.",
      budget: "Das Budget war aufgebraucht, bevor eine Quelle gelesen wurde.",
      policy: "Die Quellenrichtlinie hat alles ausgeschlossen, was die Suchen gefunden haben."
    },
    unsupported:
      "Das Folgende beruht auf dem eigenen Wissen des Modells, nicht auf Recherche: Prüfen Sie es, bevor Sie sich darauf verlassen.",
    budgetShort:
      "Das Budget reichte nicht für einen Bericht von brauchbarer Länge; es folgen daher die Rechercheergebnisse so, wie " +
      "sie gesammelt wurden, unbearbeitet, mit ihren Quellen."
  },
  pt: {
    noSource: "Nenhuma fonte foi encontrada ou lida para este relatório.",
    reasons: {
      no_tool_call: "O modelo de pesquisa nunca chamou uma ferramenta de busca.",
      searches_failed: "Todas as buscas e extrações de páginas falharam.",
      nothing_found: "As buscas não encontraram nada relevante para a pergunta.",
      research_failed: "Todas as etapas de pesquisa falharam antes de ler uma fonte.",
      budget: "O orçamento se esgotou antes que qualquer fonte fosse lida.",
      policy: "A política de fontes excluiu tudo o que as buscas encontraram."
    },
    unsupported:
      "O que segue se baseia no conhecimento próprio do modelo, não em pesquisa: verifique antes de confiar nisso.",
    budgetShort:
      "O orçamento não bastou para escrever um relatório de extensão útil; por isso, o que segue são os resultados da " +
      "pesquisa tal como foram reunidos, sem edição, com suas fontes."
  },
  it: {
    noSource: "Per questo rapporto non è stata trovata né letta alcuna fonte.",
    reasons: {
      no_tool_call: "Il modello di ricerca non ha mai chiamato uno strumento di ricerca.",
      searches_failed: "Tutte le ricerche e le estrazioni di pagine sono fallite.",
      nothing_found: "Le ricerche non hanno trovato nulla di pertinente alla domanda.",
      research_failed: "Tutte le fasi di ricerca sono fallite prima di leggere una fonte.",
      budget: "Il budget si è esaurito prima che venisse letta alcuna fonte.",
      policy: "La politica delle fonti ha escluso tutto ciò che le ricerche hanno trovato."
    },
    unsupported:
      "Quanto segue si basa sulle conoscenze proprie del modello, non su una ricerca: verificatelo prima di farvi affidamento.",
    budgetShort:
      "Il budget non bastava per scrivere un rapporto di lunghezza utile: seguono quindi i risultati della ricerca così " +
      "come sono stati raccolti, senza modifiche, con le loro fonti."
  },
  ru: {
    noSource: "Для этого отчёта не было найдено и прочитано ни одного источника.",
    reasons: {
      no_tool_call: "Исследовательская модель ни разу не вызвала инструмент поиска.",
      searches_failed: "Все поиски и извлечения страниц завершились ошибкой.",
      nothing_found: "Поиск не нашёл ничего, относящегося к вопросу.",
      research_failed: "Все шаги исследования завершились ошибкой до чтения источников.",
      budget: "Бюджет был исчерпан до того, как был прочитан хоть один источник.",
      policy: "Политика источников исключила всё, что нашёл поиск."
    },
    unsupported:
      "Дальнейшее основано на собственных знаниях модели, а не на исследовании: проверьте его, прежде чем на него полагаться.",
    budgetShort:
      "Бюджета не хватило на отчёт полезного объёма, поэтому ниже приведены результаты исследования в том виде, в " +
      "каком они были собраны, без правки, с их источниками."
  }
}

const wordingOf = (languageCode: string): Wording => wordings[languageCode] ?? english

/** The paragraph that opens a report resting on no source: that it does, why, and what that means for the reader. */
export const noSourceNotice = (languageCode: string, reason: NoSourceReason): string => {
  const wording = wordingOf(languageCode)
  const separator = languageCode === "zh" || languageCode === "ja" ? "" : " "
  return `> **${wording.noSource}**${separator}${wording.reasons[reason]}${separator}${wording.unsupported}`
}

/** The paragraph that opens the findings given in place of a report the budget could not pay for. */
export const budgetShortNotice = (languageCode: string): string => `> ${wordingOf(languageCode).budgetShort}`
