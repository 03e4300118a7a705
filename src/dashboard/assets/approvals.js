// Approvals queue: GET /v1/approvals?status=pending|granted|denied (cursor paging; pending oldest
// first). A pending intent is granted with a lease (POST /v1/approvals/{intent_id}/grant
// {ttl_seconds, note}) or denied (POST /v1/approvals/{intent_id}/deny {reason}).
import { api, query } from "./session.js"
import { $, el, formatTime, message, pageLink, start } from "./shell.js"
import { loadToolPins } from "./tool-pins.js"

const PAGE_SIZE = 20
const LEASES = [["15 minutes", 900], ["1 hour", 3600], ["8 hours", 28_800], ["1 day", 86_400], ["7 days", 604_800]]

const state = { cursor: undefined, next: undefined }

function decisionCell(item) {
  if (item.status === "granted") return el("td", { text: `granted by ${item.granted_by}, lease until ${formatTime(item.expires_at)}` })
  if (item.status === "denied") return el("td", { text: `denied by ${item.denied_by}${item.deny_reason ? `: ${item.deny_reason}` : ""}` })
  const id = item.intent_id
  const lease = el("select", { "aria-label": `Lease for ${id}` }, ...LEASES.map(([label, seconds]) => new Option(label, String(seconds))))
  const note = el("input", { "aria-label": `Note or reason for ${id}`, maxlength: 4000, placeholder: "Note / reason" })
  const grant = el("button", { type: "button", text: "Grant", "aria-label": `Grant ${id}` })
  const deny = el("button", { type: "button", text: "Deny", "aria-label": `Deny ${id}` })
  const status$ = el("span", { role: "status", class: "muted" })
  const act = async (action) => {
    grant.disabled = true
    deny.disabled = true
    const text = note.value.trim()
    try {
      const body = action === "grant"
        ? { ttl_seconds: Number(lease.value), ...(text === "" ? {} : { note: text }) }
        : text === "" ? {} : { reason: text }
      const result = await api("POST", `/v1/approvals/${encodeURIComponent(id)}/${action}`, body)
      status$.textContent = action === "grant" ? `Granted until ${formatTime(result.expires_at)}` : "Denied"
      status$.closest("tr").dataset.decided = action
    } catch (error) {
      message(status$, `Could not ${action}: ${error.message}`, "error")
      grant.disabled = false
      deny.disabled = false
    }
  }
  grant.addEventListener("click", () => act("grant"))
  deny.addEventListener("click", () => act("deny"))
  return el("td", {}, el("div", { class: "inline-form actions" }, lease, note, grant, deny), status$)
}

function row(item) {
  return el("tr", { "data-intent-id": item.intent_id, "data-status": item.status },
    el("td", { text: formatTime(item.requested_at) }),
    el("td", {}, el("code", { text: item.tool }), el("div", { class: "muted", text: `agent ${item.agent_id}` })),
    el("td", { text: item.reason }),
    el("td", { text: item.approvers.length > 0 ? item.approvers.join(", ") : "any member" }),
    el("td", {}, pageLink("/dashboard/trace", { id: item.trace_id }, "Open trace")),
    decisionCell(item))
}

async function load(cursor) {
  message($("approvals-message"), "Loading…")
  try {
    const page = await api("GET", "/v1/approvals" + query({ status: $("approval-status").value, limit: PAGE_SIZE, cursor }))
    const items = page.approvals
    state.cursor = cursor
    state.next = page.next_cursor
    $("approvals-body").replaceChildren(...items.map(row))
    $("approvals-next").disabled = !page.next_cursor
    $("approvals-first").disabled = cursor === undefined
    message($("approvals-message"), items.length === 0 ? "Nothing here." : "")
  } catch (error) {
    if (error.status !== 401) message($("approvals-message"), `Could not list approvals: ${error.message}`, "error")
  }
}

$("approval-status").addEventListener("change", () => load(undefined))
$("approvals-refresh").addEventListener("click", () => {
  void load(state.cursor)
  void loadToolPins()
})
$("approvals-first").addEventListener("click", () => load(undefined))
$("approvals-next").addEventListener("click", () => {
  if (state.next) void load(state.next)
})
start(() => {
  void load(undefined)
  void loadToolPins()
})
