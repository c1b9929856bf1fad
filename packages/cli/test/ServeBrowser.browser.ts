/**
 * The web page as a person uses it, in headless Chromium: ask a question with the keyboard, watch the run, read the
 * report, follow a citation to its source, download the report, and read it all on a phone-sized window. Needs
 * Debian's chromium at /usr/bin/chromium (CHROMIUM_PATH elsewhere). With SCREENSHOT=<file> it also saves the
 * screenshot (docs/serve.md's).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import { chromium } from "playwright-core"
import { colours, decode } from "./Png.js"
import { seedAwaiting, served, servedSlowly } from "./ServeHarness.js"

const launch = Effect.acquireRelease(
  Effect.promise(() =>
    chromium.launch({
      executablePath: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium",
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync"
      ]
    })
  ),
  (browser) => Effect.promise(() => browser.close())
)

const Target = Schema.Struct({ hash: Schema.String, entry: Schema.Boolean, inView: Schema.Boolean })
const Widths = Schema.Struct({
  scrollWidth: Schema.Number,
  innerWidth: Schema.Number,
  reportTop: Schema.Number,
  sessionsTop: Schema.Number
})

const question = "How do heat pumps compare with gas boilers for home heating?"

describe("the web page in a browser", () => {
  it.scopedLive("ask, watch the run live, read the report with linked citations, download it", () =>
    Effect.gen(function* () {
      // Each vendor call takes 150 ms, so the research rounds last long enough to be watched live.
      const s = yield* servedSlowly("150 millis", { noClarify: true })
      const browser = yield* launch
      const context = yield* Effect.promise(() =>
        browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true })
      )
      const page = yield* Effect.promise(() => context.newPage())
      const problems: Array<string> = []
      page.on("pageerror", (error) => problems.push(error.message))
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(message.text())
      })

      yield* Effect.promise(async () => {
        await page.goto(`${s.url}/`)
        await page.getByText("No sessions yet.").waitFor()
        // Asked with the keyboard only: type, then Tab past the options to the button, and Enter.
        await page.focus("#question")
        await page.keyboard.type(question)
        await page.keyboard.press("Tab")
        await page.keyboard.press("Tab")
        assert.strictEqual(await page.evaluate("document.activeElement?.textContent"), "Research")
        await page.keyboard.press("Enter")
        await page.waitForURL(/\?session=dr-/)
      })

      // Live: the researchers of the round appear with what each is doing, and sources are counted.
      const live = yield* Effect.promise(async () => {
        await page.locator(".researchers li").first().waitFor()
        return {
          researchers: await page.locator(".researchers li").count(),
          doing: await page.locator(".researchers .doing").first().textContent()
        }
      })
      assert.isAbove(live.researchers, 0)
      assert.match(live.doing ?? "", /sources/)

      const report = yield* Effect.promise(async () => {
        await page.locator("article.report h1").waitFor({ timeout: 60_000 })
        return {
          title: await page.locator("article.report h1").textContent(),
          phase: await page.getByTestId("phase").textContent(),
          sources: Number(await page.getByTestId("sources").textContent()),
          listed: await page.locator(".sessions .badge").first().textContent(),
          entries: await page.locator("section.sources li").count()
        }
      })
      assert.match(report.title ?? "", /heat pumps/i)
      assert.strictEqual(report.phase, "completed")
      assert.isAbove(report.sources, 0)
      assert.strictEqual(report.listed, "completed")
      assert.isAbove(report.entries, 0)

      // A citation leads to its entry in the source list: the address names it and it is scrolled into view.
      const target = yield* Effect.promise(async () => {
        await page.locator("a.cite").first().click()
        await page.waitForFunction(`location.hash.startsWith("#source-")`)
        return Schema.decodeUnknownSync(Target)(
          await page.evaluate(`(() => {
            const entry = document.getElementById(location.hash.slice(1))
            const box = entry?.getBoundingClientRect()
            return {
              hash: location.hash,
              entry: entry !== null && entry.closest("section.sources") !== null,
              inView: box !== undefined && box.top >= 0 && box.bottom <= window.innerHeight
            }
          })()`)
        )
      })
      assert.match(target.hash, /^#source-\d+$/)
      assert.isTrue(target.entry, "the citation's target is an entry of the source list")
      assert.isTrue(target.inView, "the entry is scrolled into view")

      const downloaded = yield* Effect.promise(async () => {
        const [download] = await Promise.all([
          page.waitForEvent("download"),
          page.getByRole("button", { name: "Download Markdown" }).click()
        ])
        const path = await download.path()
        return { name: download.suggestedFilename(), text: fs.readFileSync(path, "utf8") }
      })
      // The Markdown export: each citation a link to its entry of the source list, each entry its anchor.
      assert.match(downloaded.name, /^deep-research-dr-.*\.md$/)
      const sessionId = downloaded.name.replace(/^deep-research-/, "").replace(/\.md$/, "")
      const stored = yield* s.runs.load(sessionId)
      const firstLine = (stored.report?.markdown ?? "").split("\n")[0] ?? ""
      assert.isTrue(downloaded.text.startsWith(firstLine), "the download is this session's report")
      assert.match(downloaded.text, /\[\d+\]\(#source-\d+\)/)
      assert.include(downloaded.text, '<a id="source-1"></a>')

      const screenshot = yield* Effect.promise(async () => {
        await page.evaluate("window.scrollTo(0, 0)")
        return page.screenshot()
      })
      const image = decode(screenshot)
      assert.strictEqual(image.width, 1280)
      const { distinct, dominantShare } = colours(image)
      assert.isAbove(distinct, 50, "a page of text, buttons and badges has many colours")
      assert.isBelow(dominantShare, 0.97, "the background does not fill the screen")
      const keep = process.env["SCREENSHOT"]
      if (keep !== undefined && keep !== "") fs.writeFileSync(keep, screenshot)

      // On a phone-sized window the page fits its width: nothing to scroll sideways.
      const phone = yield* Effect.promise(async () => {
        await page.setViewportSize({ width: 390, height: 844 })
        await page.reload()
        await page.locator("article.report h1").waitFor()
        return Schema.decodeUnknownSync(Widths)(
          await page.evaluate(
            "({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, " +
              "reportTop: document.querySelector('article.report').getBoundingClientRect().top, " +
              "sessionsTop: document.getElementById('sessions').getBoundingClientRect().top })"
          )
        )
      })
      assert.isAtMost(phone.scrollWidth, phone.innerWidth)
      // The report comes right after the question's form, before the list of sessions, however long that list is.
      assert.isBelow(phone.reportTop, phone.sessionsTop)
      assert.deepStrictEqual(problems, [], problems.join("\n"))
    })
  )

  it.scopedLive(
    "with a token: the page asks for it once, then a pending question is answered and the run finishes",
    () =>
      Effect.gen(function* () {
        const token = "dr-browser-token-8c2f41d9"
        const s = yield* served({}, { token: Redacted.make(token) })
        yield* seedAwaiting(s, "dr-awaiting-web", "Which coast do you mean?")
        const browser = yield* launch
        const page = yield* Effect.promise(() => browser.newPage({ viewport: { width: 390, height: 844 } }))
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${s.url}/?session=dr-awaiting-web`)
          await page.getByLabel("This server needs its API token").fill(token)
          await page.keyboard.press("Enter")
          const question = page.getByRole("textbox", { name: "Which coast do you mean?" })
          await question.waitFor()
          await question.focus()
          await page.keyboard.type("The Bay of Fundy")
          await page.keyboard.press("Enter")
          await page.locator("article.report h1").waitFor({ timeout: 60_000 })
          return {
            badge: await page.locator(".view .badge").first().textContent(),
            storedToken: await page.evaluate("sessionStorage.getItem('deep-research-token')")
          }
        })
        assert.strictEqual(seen.badge, "completed")
        assert.strictEqual(seen.storedToken, token, "kept for the tab only, not in localStorage or a cookie")
        const session = yield* s.runs.load("dr-awaiting-web")
        assert.strictEqual(session.clarification?.answer, "The Bay of Fundy")
      })
  )
  it.scopedLive(
    "the options keep their values after a question, the question is shown once, and the list pages and marks simulated sessions",
    () =>
      Effect.gen(function* () {
        const s = yield* served({ noClarify: true })
        // Sessions another run stored before (not simulated): more than a page of them.
        for (let i = 10; i < 32; i++) yield* seedAwaiting(s, `dr-earlier-${i}`, `Which coast, ${i}?`)
        const browser = yield* launch
        const page = yield* Effect.promise(() => browser.newPage({ viewport: { width: 1280, height: 860 } }))
        const seen = yield* Effect.promise(async () => {
          await page.goto(`${s.url}/`)
          await page.locator(".sessions li").first().waitFor()
          await page.getByText("Options").click()
          await page.getByLabel("Rounds at most").fill("1")
          await page.getByLabel("Researchers at once").fill("2")
          await page.fill("#question", question)
          await page.getByRole("button", { name: "Research" }).click()
          await page.waitForURL(/\?session=dr-/)
          await page.locator("article.report h1").waitFor({ timeout: 60_000 })
          // The question as a heading or as the report's title (which drops its question mark).
          const said = new RegExp(`^\\s*${question.replace(/\?$/, "")}\\??\\s*$`)
          const once = await page.locator(".view").getByText(said).count()
          const options = {
            question: await page.inputValue("#question"),
            maxRounds: await page.getByLabel("Rounds at most").inputValue(),
            concurrency: await page.getByLabel("Researchers at once").inputValue()
          }
          const firstPage = await page.locator(".sessions li").count()
          const marked = await page.locator(".sessions .badge.simulated").count()
          const newestMarked = await page.locator(".sessions li").first().locator(".badge.simulated").count()
          await page.getByRole("button", { name: "Show 3 older (3 more)" }).click()
          await page.locator(".sessions li").nth(22).waitFor()
          return {
            once,
            options,
            firstPage,
            marked,
            newestMarked,
            all: await page.locator(".sessions li").count(),
            moreLeft: await page.locator(".sessions button.more").count()
          }
        })
        assert.strictEqual(seen.once, 1, "the question is said once, as the report's title")
        assert.deepStrictEqual(seen.options, { question: "", maxRounds: "1", concurrency: "2" })
        assert.strictEqual(seen.firstPage, 21, "20 sessions and the button that shows older ones")
        assert.strictEqual(seen.marked, 1, "only the session a simulated run made is marked")
        assert.strictEqual(seen.newestMarked, 1)
        assert.strictEqual(seen.all, 23)
        assert.strictEqual(seen.moreLeft, 0)
      })
  )

  it.scopedLive("under a finished report: a follow-up question is answered from its sources and joins the thread", () =>
    Effect.gen(function* () {
      const s = yield* served({ noClarify: true })
      const { sessionId } = yield* s.runs.start(question, {})
      yield* s.runs.awaitRun(sessionId)
      const browser = yield* launch
      const page = yield* Effect.promise(() => browser.newPage())
      const problems: Array<string> = []
      page.on("pageerror", (error) => problems.push(error.message))
      const thread = yield* Effect.promise(async () => {
        await page.goto(`${s.url}/?session=${sessionId}`)
        await page.locator("article.report h1").waitFor({ timeout: 60_000 })
        await page.fill("#follow-up-question", "What do the sources say about heat pumps?")
        await page.getByRole("button", { name: "Ask" }).click()
        await page.locator(".follow-up h4").first().waitFor()
        return {
          question: await page.locator(".follow-up h4").first().textContent(),
          answer: await page.locator(".follow-up pre.answer").first().textContent(),
          sources: await page.locator(".follow-up .sources li").count()
        }
      })
      assert.strictEqual(thread.question, "What do the sources say about heat pumps?")
      assert.match(thread.answer ?? "", /\[\d+\]/)
      assert.isAbove(thread.sources, 0)
      assert.strictEqual((yield* s.runs.load(sessionId)).answers.length, 1)
      assert.deepStrictEqual(problems, [], problems.join("\n"))
    })
  )
})
