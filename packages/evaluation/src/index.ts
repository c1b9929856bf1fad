/** deep-research evaluation: report judging, citation checks, claim verification and a DeepResearch Bench runner. */
export * as BenchmarkRunner from "./BenchmarkRunner.js"
export * as CitationCheck from "./CitationCheck.js"
export * as ClaimVerification from "./ClaimVerification.js"
export * as Evaluation from "./Evaluation.js"
export * as Judge from "./Judge.js"
