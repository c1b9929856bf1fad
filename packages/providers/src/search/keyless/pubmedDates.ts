/**
 * PubMed's dates as the report's sources give them: a record's `PubDate` or `ArticleDate` (a year, a month by name or
 * number, a day) as `YYYY-MM-DD`, `YYYY-MM` or `YYYY`. Apart from `PubMed.ts`, which reads the records.
 */
import * as Xml from "./xml.js"

const months: Readonly<Record<string, string>> = {
  jan: "01",
  feb: "02",
  mar: "03",
  apr: "04",
  may: "05",
  jun: "06",
  jul: "07",
  aug: "08",
  sep: "09",
  oct: "10",
  nov: "11",
  dec: "12"
}

/** A `PubDate` or `ArticleDate` as `YYYY-MM-DD`, `YYYY-MM` or `YYYY` (`MedlineDate` gives its year). */
export const dateOf = (date: Xml.Node | undefined): string | undefined => {
  if (date === undefined) return undefined
  const year = Xml.textOf(date, "Year") ?? /\b(\d{4})\b/.exec(Xml.textOf(date, "MedlineDate") ?? "")?.[1]
  if (year === undefined) return undefined
  const monthText = (Xml.textOf(date, "Month") ?? "").toLowerCase()
  const month = /^\d{1,2}$/.test(monthText) ? monthText.padStart(2, "0") : months[monthText.slice(0, 3)]
  const day = Xml.textOf(date, "Day")
  if (month === undefined) return year
  return day === undefined || !/^\d{1,2}$/.test(day) ? `${year}-${month}` : `${year}-${month}-${day.padStart(2, "0")}`
}
