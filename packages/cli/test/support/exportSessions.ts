/**
 * Completed sessions as the verification phase leaves them, for the export tests: a checked English report (one
 * citation removed, one sentence marked, the rest renumbered, so that the check's verdicts name the numbers the report
 * had before), and short checked reports in Russian, Arabic and Chinese with the check's own wording.
 */
import { Research, ResearchConfig, Session, SessionStore, Source } from "@deep-research/core"
import * as Effect from "effect/Effect"
import * as Store from "../../src/Store.js"

const study = new Source.Source({
  id: "s-study",
  url: "https://example.org/study",
  title: "Cold climate heat pump field study",
  content: "Field study text.",
  provider: "openalex",
  quality: "high",
  publishedDate: "2021-03-01",
  retrievedAt: 0,
  rawLength: 100,
  work: new Source.Work({ authors: ["Ada Author", "Ben Author"], year: 2021, venue: "Energy Journal" })
})
const maine = new Source.Source({
  id: "s-maine",
  url: "https://example.org/maine?a=1&b=2",
  title: "Maine trials",
  content: "Maine text.",
  provider: "tavily",
  quality: "medium",
  retrievedAt: 0,
  rawLength: 100
})
const vendor = new Source.Source({
  id: "s-vendor",
  url: "https://example.org/vendor",
  title: "Vendor brochure",
  content: "Vendor text.",
  provider: "tavily",
  quality: "low",
  retrievedAt: 0,
  rawLength: 100
})

const citation = (number: number, source: Source.Source) =>
  new Research.Citation({
    number,
    sourceId: source.id,
    url: source.url,
    title: source.title,
    ...(source.work === undefined ? {} : { work: source.work })
  })

const verdict = (
  sentence: string,
  label: Research.SupportLabel,
  citations: ReadonlyArray<readonly [number, Research.SupportLabel]>,
  removed: ReadonlyArray<number> = []
) =>
  new Research.SentenceVerdict({
    sentence,
    status: "checked",
    label,
    citations: citations.map(([number, label]) => new Research.CitedSupport({ number, label })),
    removed,
    marked: removed.length > 0 && removed.length === citations.length,
    explanation: `${label} by the sources`
  })

const completed = (
  id: string,
  report: { title: string; markdown: string; language: string; citations: ReadonlyArray<Research.Citation> },
  verification: Research.Verification | undefined,
  sources: ReadonlyArray<Source.Source>
) =>
  new Session.Session({
    version: Session.currentVersion,
    id,
    query: report.title,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    config: verification === undefined ? new ResearchConfig.ResearchConfig({ verify: false }) : ResearchConfig.defaults,
    status: "completed",
    rounds: [],
    sources,
    report: new Research.Report({ ...report, droppedCitations: 0 }),
    ...(verification === undefined ? {} : { verification }),
    metrics: [],
    usage: []
  })

export const englishMarkdown = `# Heat pumps in cold climates

## Findings

Cold-climate heat pumps keep a COP above 2 at -15 °C [1]. Field trials in Maine found savings of 30% [1, 2]. Some vendors claim no loss of capacity at all. *(not supported by the cited sources)*

- Defrost cycles cost 5-10% of output [2].
- See the [DOE page](https://www.energy.gov/heat-pumps) for **more**.

| Climate | COP |
| --- | --- |
| Cold | 2.1 [1] |

## Sources

1. [Cold climate heat pump field study](https://example.org/study) — Ada Author, Ben Author (2021), Energy Journal
2. [Maine trials](https://example.org/maine?a=1&b=2)

*Citation check: 4 of 4 cited sentences were checked against their sources; 1 was changed.*
`

/** The English report, checked: before the check, [2] was the vendor's brochure and [3] the Maine trials. */
export const english = completed(
  "export-en",
  {
    title: "Heat pumps in cold climates",
    markdown: englishMarkdown,
    language: "English",
    citations: [citation(1, study), citation(2, maine)]
  },
  new Research.Verification({
    sentences: 4,
    checked: 4,
    changed: 1,
    removedCitations: 1,
    marked: 1,
    verdicts: [
      verdict("Cold-climate heat pumps keep a COP above 2 at -15 °C [1].", "supported", [[1, "supported"]]),
      verdict("Field trials in Maine found savings of 30% [1, 3].", "supported", [
        [1, "partially_supported"],
        [3, "supported"]
      ]),
      verdict("Some vendors claim no loss of capacity at all [2].", "unsupported", [[2, "unsupported"]], [2]),
      verdict("Defrost cycles cost 5-10% of output [3].", "supported", [[3, "supported"]])
    ]
  }),
  [study, vendor, maine]
)

const short = (id: string, language: string, title: string, sentence: string, heading: string, line: string) =>
  completed(
    id,
    {
      title,
      language,
      markdown: `# ${title}\n\n${sentence} [1]\n\n## ${heading}\n\n1. [${study.title}](${study.url})\n\n*${line}*\n`,
      citations: [citation(1, study)]
    },
    new Research.Verification({
      sentences: 1,
      checked: 1,
      changed: 0,
      removedCitations: 0,
      marked: 0,
      verdicts: [verdict(`${sentence} [1]`, "supported", [[1, "supported"]])]
    }),
    [study]
  )

export const russian = short(
  "export-ru",
  "Russian",
  "Тепловые насосы в холодном климате",
  "Тепловые насосы сохраняют эффективность при морозе.",
  "Источники",
  "Проверка ссылок: 1 из 1 предложений со ссылками сверены с источниками; изменено: 0."
)

export const arabic = short(
  "export-ar",
  "Arabic",
  "المضخات الحرارية في المناخ البارد",
  "تحافظ المضخات الحرارية على كفاءتها في البرد.",
  "المصادر",
  "Citation check: 1 of 1 cited sentences were checked against their sources; 0 were changed."
)

export const chinese = short(
  "export-zh",
  "Chinese",
  "寒冷气候中的热泵",
  "热泵在严寒中仍保持较高效率。",
  "参考文献",
  "引用核查：1 个带引用的句子中，有 1 个已对照其来源核查；0 个已修改。"
)

/** The English report with the check turned off. */
export const unchecked = completed(
  "export-off",
  {
    title: "Unchecked",
    markdown: `# Unchecked\n\nA claim [1].\n\n## Sources\n\n1. [${study.title}](${study.url})\n\n*Citation check: off for this report; the citations were not checked against their sources.*\n`,
    language: "English",
    citations: [citation(1, study)]
  },
  undefined,
  [study]
)

/** Saves sessions into the store of a folder, as a run would have left them. */
export const saveAll = (storeDir: string, sessions: ReadonlyArray<Session.Session>) =>
  Effect.runPromise(
    Effect.flatMap(SessionStore.SessionStore, (store) => Effect.forEach(sessions, (s) => store.save(s))).pipe(
      Effect.provide(Store.storeLayer(storeDir)),
      Effect.orDie
    )
  )
