// Review queues: GET /v1/review-queues with each queue's progress, the chosen queue's items
// (GET /v1/review-queues/{id}/items, pending first, cursor paging) linking to the trace page
// where the review is made, and the human-review analytics (GET /v1/analytics/human-review).
import { barChart, formatNumber } from "./charts.js"
import { api, query } from "./session.js"
import { $, effectBadge, el, formatTime, message, start, traceLink } from "./shell.js"

const PAGE_SIZE = 20
const state = { queue: undefined, cursor: undefined, next: undefined }

/** Reviewed and total counts of a queue, from whichever progress fields it carries. */
function progressOf(queue) {
  const p = queue.progress ?? queue
  const total = p.total ?? p.item_count ?? p.sampled ?? 0
  const reviewed = p.reviewed ?? p.reviewed_count ?? (total - (p.pending ?? p.pending_count ?? total))
  return { total, reviewed }
}

function progressBar(queue, label) {
  const { total, reviewed } = progressOf(queue)
  return el("span", { class: "stack" },
    el("progress", { max: Math.max(total, 1), value: reviewed, "aria-label": label }),
    el("span", { class: "muted", text: `${reviewed} of ${total} reviewed` }))
}

function describeRules(rules) {
  if (!Array.isArray(rules) || rules.length === 0) return "all traces"
  return rules.map((rule) => Object.entries(rule).map(([k, v]) => `${k} ${v}`).join(", ")).join("; ")
}

async function loadQueues() {
  message($("queues-message"), "Loading…")
  try {
    const page = await api("GET", "/v1/review-queues" + query({ limit: PAGE_SIZE }))
    const queues = page.review_queues ?? page.queues ?? []
    message($("queues-message"), queues.length === 0 ? "No review queues yet: create one with POST /v1/review-queues." : "")
    $("queues").replaceChildren(...queues.map((queue) => el("li", { "data-queue-id": queue.id },
      el("button", { type: "button", class: "link", text: queue.name, "aria-pressed": String(queue.id === state.queue?.id), onclick: () => openQueue(queue) }),
      el("div", { class: "muted", text: `${Math.round((queue.sample_rate ?? 1) * 100)} % of ${describeRules(queue.rules)}` }),
      progressBar(queue, `Progress of ${queue.name}`))))
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
  $("items-progress").replaceChildren(progressBar(queue, `Progress of ${queue.name}`))
  message($("items-message"), "Loading…")
  try {
    const page = await api("GET", `/v1/review-queues/${encodeURIComponent(queue.id)}/items` + query({ limit: PAGE_SIZE, cursor }))
    const items = page.items ?? page.traces ?? []
    state.cursor = cursor
    state.next = page.next_cursor
    $("items-body").replaceChildren(...items.map((item) => {
      const trace = item.trace ?? item
      const outcome = item.review_outcome ?? trace.latest_review_outcome
      return el("tr", { "data-trace-id": trace.trace_id, "data-reviewed": String(Boolean(outcome)) },
        el("td", { text: formatTime(trace.created_at) }),
        el("td", {}, effectBadge(trace.decision ?? trace.effect)),
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
    const points = Object.entries(result.outcomes).map(([key, value]) => ({ label: key.replace(/_count$/, ""), value }))
    const total = points.reduce((sum, p) => sum + p.value, 0)
    $("analytics-outcomes").replaceChildren(el("h3", { text: "Outcomes" }),
      barChart(points, { total }, { title: "Review outcomes", metric: "review_count", group_by: "outcome" }))
  } catch (error) {
    if (error.status !== 401) message($("analytics-message"), `Could not load analytics: ${error.message}`, "error")
  }
}

$("items-next").addEventListener("click", () => state.next && openQueue(state.queue, state.next))
$("items-first").addEventListener("click", () => openQueue(state.queue))
start(() => Promise.all([loadQueues(), loadAnalytics()]))
