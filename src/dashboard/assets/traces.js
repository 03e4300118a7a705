// Trace explorer: GET /v1/traces with the filters of the form, one page of PAGE_SIZE at a time
// (cursor paging: "Next page" follows next_cursor), and a live tail that polls
// GET /v1/traces?after=<tail_cursor> with the same filters and puts new traces on top.
import { api, query } from "./session.js"
import { $, effectBadge, el, formatTime, message, start, traceLink } from "./shell.js"

const PAGE_SIZE = 25
const TAIL_MS = 3000
const FIELDS = ["agent_id", "effect", "event_kind", "policy_id", "run_id", "session_id", "environment_id", "review_outcome", "start", "end", "q"]

const state = { cursor: undefined, next: undefined, tail: undefined, timer: undefined, environments: new Map() }

/** The form's filters as API parameters (local date-times become instants). */
function filters() {
  const form = $("trace-filters")
  const values = {}
  for (const name of FIELDS) {
    const raw = form.elements[name].value.trim()
    if (raw === "") continue
    values[name] = name === "start" || name === "end" ? new Date(raw).toISOString() : raw
  }
  return values
}

/** The filters live in the address too, so a filtered list can be bookmarked and shared. */
function fillFormFromAddress() {
  const params = new URLSearchParams(location.search)
  const form = $("trace-filters")
  for (const name of FIELDS) {
    const value = params.get(name)
    if (value === null) continue
    form.elements[name].value = name === "start" || name === "end" ? toLocalInput(value) : value
  }
}

function toLocalInput(iso) {
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return ""
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000)
  return local.toISOString().slice(0, 16)
}

/** The agent as a button that narrows the list to that agent's traces. */
function agentFilterButton(agentId) {
  if (!agentId) return "—"
  return el("button", {
    type: "button",
    class: "link",
    "data-agent-id": agentId,
    "aria-label": `Show only agent ${agentId}`,
    text: agentId,
    onclick: () => {
      $("trace-filters").elements.agent_id.value = agentId
      void loadPage(undefined)
    }
  })
}

function row(trace) {
  const request = trace.payload?.request ?? {}
  const response = trace.payload?.response ?? {}
  const environment = state.environments.get(trace.environment_id) ?? trace.environment
  return el("tr", { "data-trace-id": trace.trace_id, "data-effect": trace.decision },
    el("td", { text: formatTime(trace.created_at) }),
    el("td", {}, agentFilterButton(trace.agent_id)),
    el("td", {}, effectBadge(trace.decision)),
    el("td", { text: request.kind ?? "" }),
    el("td", { text: request.action?.operation ?? "" }),
    el("td", { text: response.reason ?? "" }),
    el("td", { text: environment ?? "" }),
    el("td", { text: trace.latest_review_outcome ?? "—" }),
    el("td", {}, traceLink(trace)))
}

const showCount = () => { $("traces-count").textContent = `(${$("traces-body").children.length} shown)` }

async function loadPage(cursor) {
  const params = filters()
  history.replaceState(null, "", location.pathname + query(params))
  message($("traces-message"), "Loading…")
  try {
    const page = await api("GET", "/v1/traces" + query({ ...params, limit: PAGE_SIZE, cursor }))
    state.cursor = cursor
    state.next = page.next_cursor
    // The tail starts from the newest trace of the unpaged list.
    if (cursor === undefined) state.tail = page.tail_cursor
    $("traces-body").replaceChildren(...page.traces.map(row))
    $("next-page").disabled = !page.next_cursor
    $("first-page").disabled = cursor === undefined
    showCount()
    message($("traces-message"), page.traces.length === 0 ? "No traces match these filters." : "")
  } catch (error) {
    if (error.status !== 401) message($("traces-message"), `Could not list traces: ${error.message}`, "error")
  }
}

/** One poll of the live tail: newer traces (oldest first) go on top; the table keeps PAGE_SIZE rows. */
async function pollTail() {
  if (state.cursor !== undefined || document.visibilityState !== "visible") return
  try {
    const page = await api("GET", "/v1/traces" + query({ ...filters(), limit: PAGE_SIZE, after: state.tail }))
    if (page.tail_cursor) state.tail = page.tail_cursor
    const body = $("traces-body")
    for (const trace of page.traces) {
      if (!body.querySelector(`[data-trace-id="${CSS.escape(trace.trace_id)}"]`)) body.prepend(row(trace))
    }
    while (body.children.length > PAGE_SIZE) body.lastElementChild.remove()
    showCount()
    if (page.traces.length > 0) message($("traces-message"), "")
    $("tail-status").textContent = `Live: checked ${new Date().toLocaleTimeString()}`
  } catch (error) {
    $("tail-status").textContent = `Live tail paused: ${error.message}`
  }
}

function setTail(on) {
  clearInterval(state.timer)
  state.timer = on ? setInterval(pollTail, TAIL_MS) : undefined
  $("tail-status").textContent = on ? "Live: on" : ""
  // The tail follows the newest page.
  if (on && state.cursor !== undefined) void loadPage(undefined)
}

async function loadEnvironments() {
  try {
    const list = await api("GET", "/v1/environments")
    const select = $("environment-select")
    const chosen = new URLSearchParams(location.search).get("environment_id") ?? ""
    for (const environment of list.environments ?? []) {
      state.environments.set(environment.id, environment.slug ?? environment.name)
      select.append(new Option(environment.name ?? environment.slug, environment.id))
    }
    select.value = chosen
  } catch {
    // The filter still works without names.
  }
}

$("trace-filters").addEventListener("submit", (event) => {
  event.preventDefault()
  void loadPage(undefined)
})
$("trace-filters").addEventListener("reset", () => setTimeout(() => loadPage(undefined)))
$("next-page").addEventListener("click", () => {
  if (state.next) void loadPage(state.next)
})
$("first-page").addEventListener("click", () => loadPage(undefined))
$("live-tail").addEventListener("change", (event) => setTail(event.target.checked))

fillFormFromAddress()
start(async () => {
  await loadEnvironments()
  await loadPage(undefined)
}, () => setTail(false))
