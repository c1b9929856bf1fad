/**
 * Answers for what no route of `deep-research serve` handled, which the router leaves as an empty response: a path
 * that is served with another method is a 405 naming the methods it takes (with `Allow`), a path nobody serves a 404,
 * and any other bodiless error gets its status's text, all as JSON `{_tag, message}` like every other error of the API.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as nodeHttp from "node:http"

/** A route: its method and a pattern of its path (`:name` is one segment). */
interface Route {
  readonly method: string
  readonly pattern: RegExp
}

const patternOf = (path: string): RegExp =>
  new RegExp(
    `^${path
      .split("/")
      .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/")}/?$`
  )

/** Every route of an API, and the pages and documents served beside it (`GET` only). */
export const routesOf = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>,
  pages: ReadonlyArray<string>
): ReadonlyArray<Route> => {
  const routes: Array<Route> = pages.map((path) => ({ method: "GET", pattern: patternOf(path) }))
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      routes.push({ method: endpoint.method, pattern: patternOf(endpoint.path) })
    }
  })
  return routes
}

/** The methods a path is served with, `HEAD` with `GET`, sorted. */
export const methodsFor = (routes: ReadonlyArray<Route>, path: string): ReadonlyArray<string> => {
  const methods = new Set<string>()
  for (const route of routes) {
    if (!route.pattern.test(path)) continue
    methods.add(route.method)
    if (route.method === "GET") methods.add("HEAD")
  }
  return [...methods].sort()
}

/** The response for a request that ended with `response`: itself unless it is an error without a body. */
export const explain = (
  routes: ReadonlyArray<Route>,
  method: string,
  url: string,
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  if (response.status < 400 || response.body._tag !== "Empty") return response
  const path = url.split("?")[0] ?? "/"
  if (response.status === 404) {
    const methods = methodsFor(routes, path)
    if (methods.length > 0 && !methods.includes(method)) {
      return HttpServerResponse.unsafeJson(
        { _tag: "MethodNotAllowed", message: `${path} does not take ${method}; it takes ${methods.join(", ")}.` },
        { status: 405, headers: { ...response.headers, allow: methods.join(", ") } }
      )
    }
    return HttpServerResponse.unsafeJson(
      { _tag: "NotFound", message: `Nothing is served at ${method} ${path}.` },
      { status: 404, headers: response.headers }
    )
  }
  return HttpServerResponse.unsafeJson(
    { _tag: "HttpError", message: nodeHttp.STATUS_CODES[response.status] ?? `HTTP ${response.status}` },
    { status: response.status, headers: response.headers }
  )
}
