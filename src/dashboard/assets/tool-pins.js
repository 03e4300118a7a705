// MCP tools withheld by their pin (docs/mcp.md "Tool pinning"): every server's pins
// (GET /v1/mcp/servers, GET /v1/mcp/servers/{id}/tools, each page by page) that are not as accepted; a changed one is
// accepted with POST /v1/mcp/servers/{id}/tools/{tool}/accept (admins).
import { api, query } from "./session.js"
import { $, el, formatTime, message } from "./shell.js"

function decisionCell(server, pin) {
  if (pin.status === "poisoned") {
    return el("td", { class: "muted", text: "Its description is refused by a policy; listed again, it is screened again." })
  }
  const accept = el("button", { type: "button", text: "Accept", "aria-label": `Accept the new definition of ${pin.tool}` })
  const status$ = el("span", { role: "status", class: "muted" })
  accept.addEventListener("click", async () => {
    accept.disabled = true
    try {
      const path = `/v1/mcp/servers/${encodeURIComponent(server.id)}/tools/${encodeURIComponent(pin.tool)}/accept`
      const accepted = await api("POST", path, { seen_digest: pin.seen_digest })
      status$.textContent = `Accepted: ${accepted.status}`
      status$.closest("tr").dataset.status = accepted.status
    } catch (error) {
      message(status$, `Could not accept: ${error.message}`, "error")
      accept.disabled = false
    }
  })
  return el("td", {}, accept, status$)
}

/** What an admin reads before accepting: the listed description (the digest covers the schemas too). */
const definitionText = (definition) =>
  typeof definition?.description === "string" ? `Listed as: ${definition.description}` : ""

const row = (server, pin) =>
  el("tr", { "data-server-id": server.id, "data-tool": pin.tool, "data-status": pin.status },
    el("td", { text: server.display_name }),
    el("td", {}, el("code", { text: pin.tool }), el("div", { class: "muted", text: definitionText(pin.seen_definition) })),
    el("td", { text: pin.status === "changed" ? "changed since accepted" : "poisoned" }),
    el("td", { text: formatTime(pin.seen_at) }),
    decisionCell(server, pin))

/** Every item of a paged list (`key` of each page), following next_cursor to its end. */
async function* everyPage(path, key, params = {}) {
  let cursor
  do {
    const page = await api("GET", `${path}${query({ ...params, limit: 100, cursor })}`)
    yield* page[key]
    cursor = page.next_cursor
  } while (cursor)
}

/** Lists the withheld pins of every MCP server of the workspace. */
export async function loadToolPins() {
  message($("tool-pins-message"), "Loading…")
  try {
    const rows = []
    for await (const server of everyPage("/v1/mcp/servers", "mcp_servers")) {
      // Only the withheld pins: a server's pins may carry 64 KiB of definition each.
      const pins = everyPage(`/v1/mcp/servers/${encodeURIComponent(server.id)}/tools`, "tools", { withheld: "true" })
      for await (const pin of pins) rows.push(row(server, pin))
    }
    $("tool-pins-body").replaceChildren(...rows)
    message($("tool-pins-message"), rows.length === 0 ? "No tool is withheld." : "")
  } catch (error) {
    // A workspace without the MCP gateway has no pins to show.
    if (error.code === "feature_disabled") $("tool-pins-title").closest("section").hidden = true
    else if (error.status !== 401) message($("tool-pins-message"), `Could not list MCP tools: ${error.message}`, "error")
  }
}
