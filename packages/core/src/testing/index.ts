/** Test doubles for deep-research programs: scripted models, a static web and a memory session store. */
export * as MemorySessionStore from "./MemorySessionStore.js"
export * as ScriptedModel from "./ScriptedModel.js"
export * as StaticWeb from "./StaticWeb.js"
export * as ScriptedRun from "./ScriptedRun.js"
