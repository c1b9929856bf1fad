/**
 * Run before every test file: what a test writes straight to the process's stdout or stderr (a notice the CLI
 * prints, a warning of Node's) goes to vitest's console like its log lines, which vitest keeps with the test and
 * prints only when the test fails (`silent: "passed-only"` in vitest.config.ts). Done once a worker process.
 */
const routed = Symbol.for("deep-research/test-output-routed")

const toConsole = (stream: NodeJS.WriteStream, print: (text: string) => void) =>
  Reflect.set(stream, "write", (chunk: unknown, encoding?: unknown, callback?: unknown) => {
    const text = typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("utf8") : String(chunk)
    print(text.endsWith("\n") ? text.slice(0, -1) : text)
    const done = typeof encoding === "function" ? encoding : callback
    if (typeof done === "function") process.nextTick(() => done())
    return true
  })

if (Reflect.get(globalThis, routed) !== true) {
  Reflect.set(globalThis, routed, true)
  toConsole(process.stdout, (text) => console.log(text))
  toConsole(process.stderr, (text) => console.error(text))
}
