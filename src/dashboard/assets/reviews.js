// Review queues: GET /v1/review-queues with each queue's progress, the chosen queue's items
// (GET /v1/review-queues/{id}/items, pending first, cursor paging) linking to the trace page
// where the review is made, and the human-review analytics (GET /v1/analytics/human-review).
import { formatNumber, tableChart } from "./charts.js"
import { api, query } from "./session.js"
import { $, effectBadge, el, formatTime, message, start, traceLink } from "./shell.js"

const PAGE_SIZE = 20
const state = { queue: undefined, cursor: undefined, next: undefined }

function progressBar(progress, label) {
  return el("span", { class: "stack", "data-reviewed": progress.reviewed, "data-total": progress.total },
    el("progress", { max: Math.max(progress.total, 1), value: progress.reviewed, "aria-label": label }),
    el("span", { class: "muted", text: `${progress.reviewed} of ${progress.total} reviewed, ${progress.pending} pending` }))
}

/** A queue's progress: the items answer counts the whole queue, so one item is enough to ask for. */
const progressOf = (queue) =>
  api("GET", `/v1/review-queues/${encodeURIComponent(queue.id)}/items${query({ limit: 1 })}`).then((page) => page.progress)

function describeRules(rules) {
  if (!Array.isArray(rules) || rules.length === 0) return "all traces"
  return rules.map((rule) => {
    const conditions = Object.entries(rule).filter(([k]) => k !== "sample_rate").map(([k, v]) => `${k} = ${v}`)
    const share = rule.sample_rate === undefined ? "" : `${Math.round(rule.sample_rate * 100)} % of `
    return share + (conditions.length === 0 ? "all traces" : conditions.join(", "))
  }).join("; ")
}

async function loadQueues() {
  message($("queues-message"), "Loading…")
  try {
    const page = await api("GET", "/v1/review-queues" + query({ limit: PAGE_SIZE }))
    const queues = page.review_queues
    message($("queues-message"), queues.length === 0 ? "No review queues yet: create one below." : "")
    const progress = await Promise.all(queues.map((queue) => progressOf(queue).catch(() => ({ total: 0, reviewed: 0, pending: 0 }))))
    $("queues").replaceChildren(...queues.map((queue, i) => el("li", { "data-queue-id": queue.id },
      el("button", { type: "button", class: "link", text: queue.name, "aria-pressed": String(queue.id === state.queue?.id), onclick: () => openQueue(queue) }),
      el("div", { class: "muted", text: `Samples ${Math.round(queue.sample_rate * 100)} % of: ${describeRules(queue.rules)}` }),
      progressBar(progress[i], `Progress of ${queue.name}`))))
    if (!state.queue && queues.length > 0) await openQueue(queues[0])
  } catch (error) {
    if (error.status !== 401) message($("queues-message"), `Could not list queues: ${error.message}`, "error")
  }
}

async function openQueue(queue, cursor) {
  state.queue = queue
  for (const button of $("queues").querySelectorAll("button[aria-pressed]")) {
    button.setAttribute("aria-pressed", String(button.closest("li").dataset.queueId === queue.id))
  }
  $("items-card").hidden = false
  $("items-title").textContent = `Items of ${queue.name}`
  message($("items-message"), "Loading…")
  try {
    const page = await api("GET", `/v1/review-queues/${encodeURIComponent(queue.id)}/items` + query({ limit: PAGE_SIZE, cursor }))
    const items = page.items
    $("items-progress").replaceChildren(progressBar(page.progress, `Progress of ${queue.name}`))
    state.cursor = cursor
    state.next = page.next_cursor
    $("items-body").replaceChildren(...items.map((trace) => {
      const outcome = trace.latest_review_outcome
      return el("tr", { "data-trace-id": trace.trace_id, "data-reviewed": String(Boolean(outcome)) },
        el("td", { text: formatTime(trace.created_at) }),
        el("td", {}, effectBadge(trace.decision)),
        el("td", { text: trace.payload?.response?.reason ?? "" }),
        el("td", { text: outcome ?? "pending" }),
        el("td", {}, traceLink(trace)))
    }))
    $("items-next").disabled = !page.next_cursor
    $("items-first").disabled = cursor === undefined
    message($("items-message"), items.length === 0 ? "No items sampled yet." : "")
  } catch (error) {
    if (error.status !== 401) message($("items-message"), `Could not list items: ${error.message}`, "error")
  }
}

async function loadAnalytics() {
  try {
    const result = await api("GET", "/v1/analytics/human-review")
    const s = result.summary
    const facts = [
      ["Traces", formatNumber(s.trace_count)],
      ["Human reviews", formatNumber(s.human_review_count)],
      ["Human interventions", formatNumber(s.human_intervention_count)],
      ["Automated interventions", formatNumber(s.automated_intervention_count)],
      ["False-positive rate", formatNumber(s.false_positive_rate, "fp_rate")],
      ["Human intervention rate", formatNumber(s.human_intervention_rate, "hi_rate")]
    ]
    $("analytics-summary").replaceChildren(...facts.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", { text: value })]))
    const points = Object.entries(result.outcomes).map(([key, value]) => ({ label: key.replace(/_count$/, "").replace("_", " "), value }))
    const total = points.reduce((sum, p) => sum + p.value, 0)
    $("analytics-outcomes").replaceChildren(el("h3", { text: "Outcomes" }),
      tableChart(points, { total }, { title: "Review outcomes", metric: "Reviews", group_by: "Outcome" }))
  } catch (error) {
    if (error.status !== 401) message($("analytics-message"), `Could not load analytics: ${error.message}`, "error")
  }
}

/** A queue with one rule from the form: its conditions, and the share of matching traces kept. */
async function createQueue(event) {
  event.preventDefault()
  const form = event.target
  const rule = {}
  for (const name of ["agent_id", "effect", "policy_id", "event_kind"]) {
    const value = form.elements[name].value.trim()
    if (value !== "") rule[name] = value
  }
  const percent = Number(form.elements.sample_percent.value)
  try {
    const queue = await api("POST", "/v1/review-queues", {
      name: form.elements.name.value.trim(),
      rules: [rule],
      sample_rate: Math.min(Math.max(percent, 0), 100) / 100
    })
    form.reset()
    message($("create-message"), `Queue ${queue.name} created.`)
    state.queue = queue
    await loadQueues()
    await openQueue(queue)
  } catch (error) {
    message($("create-message"), `Could not create the queue: ${error.message}`, "error")
  }
}

$("create-queue").addEventListener("submit", createQueue)
$("items-next").addEventListener("click", () => state.next && openQueue(state.queue, state.next))
$("items-first").addEventListener("click", () => openQueue(state.queue))
start(() => Promise.all([loadQueues(), loadAnalytics()]))
