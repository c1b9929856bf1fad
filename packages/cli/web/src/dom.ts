/** Building the page's elements: text always goes in as text, never as HTML. */

type Child = Node | string | undefined | false

/** An element with attributes and children. */
export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | undefined> = {},
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue
    element.setAttribute(name, value === true ? "" : value)
  }
  for (const child of children) {
    if (child === undefined || child === false) continue
    element.append(child)
  }
  return element
}

/** The element with this id, of the expected kind. */
export const byId = <T extends HTMLElement>(id: string, kind: new () => T): T => {
  const element = document.getElementById(id)
  if (!(element instanceof kind)) throw new Error(`#${id} is missing`)
  return element
}

/** A button that runs an action; it is disabled while the action runs. */
export const button = (label: string, action: () => Promise<void> | void, className?: string): HTMLButtonElement => {
  const b = h("button", { type: "button", class: className })
  b.textContent = label
  b.addEventListener("click", async () => {
    b.disabled = true
    try {
      await action()
    } finally {
      b.disabled = false
    }
  })
  return b
}
