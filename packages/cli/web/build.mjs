// Builds the web page into ../assets (committed, so that `serve` needs no build step): the script bundled by
// esbuild, the page, its style and icon copied. `node web/build.mjs --check` fails when the committed files differ from a
// fresh build, which the tests run too.
import * as esbuild from "esbuild"
import * as fs from "node:fs"

const web = new URL("./", import.meta.url)
const assets = new URL("../assets/", import.meta.url)

/** The files of a fresh build, by name. */
export const build = async () => {
  const result = await esbuild.build({
    entryPoints: [new URL("src/main.ts", web).pathname],
    bundle: true,
    format: "esm",
    target: "es2020",
    minify: true,
    legalComments: "none",
    write: false,
    logLevel: "silent"
  })
  const script = result.outputFiles[0]
  if (script === undefined) throw new Error("esbuild wrote nothing")
  return {
    "app.js": script.text,
    "index.html": fs.readFileSync(new URL("index.html", web), "utf8"),
    "app.css": fs.readFileSync(new URL("app.css", web), "utf8"),
    "favicon.svg": fs.readFileSync(new URL("favicon.svg", web), "utf8")
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = await build()
  if (process.argv.includes("--check")) {
    const stale = Object.entries(files).filter(([name, text]) => {
      const path = new URL(name, assets)
      return !fs.existsSync(path) || fs.readFileSync(path, "utf8") !== text
    })
    if (stale.length > 0) {
      console.error(
        `Stale: ${stale.map(([name]) => `assets/${name}`).join(", ")}. Run: npm run build:web -w packages/cli`
      )
      process.exit(1)
    }
  } else {
    fs.mkdirSync(assets, { recursive: true })
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(new URL(name, assets), text)
    console.log(
      `Built ${Object.keys(files)
        .map((name) => `assets/${name}`)
        .join(", ")}`
    )
  }
}
