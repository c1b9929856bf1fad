/** deep-research cli: the typed client and API declaration of `deep-research serve`, for Effect programs. */
export * as ServeApi from "./http/Api.js"
export * as ServeClient from "./http/Client.js"
