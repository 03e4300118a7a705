// One trace: the decision as stored (payload per the workspace's data handling mode), its findings
// with evidence highlighted, the transformed value, the receipt verified in this browser, the run
// around it, its reviews and a review form (POST /v1/traces/{id}/review-events).
import { highlighted, spansOf, textOf, evidenceOf } from "./highlight.js"
import { verifyReceipt } from "./receipt.js"
import { api, query } from "./session.js"
import { $, effectBadge, el, formatTime, message, pageLink, param, start, traceLink } from "./shell.js"

// Five on each side of this decision's run event and of this trace.
const NEIGHBOURS = 11
const REVIEWS = 20

const traceId = param("id")

/** The trace by id (GET /v1/traces/{id}); null when the workspace has none. */
async function findTrace() {
  try {
    return await api("GET", `/v1/traces/${encodeURIComponent(traceId)}`)
  } catch (error) {
    if (error.status === 404) return null
    throw error
  }
}

const fact = (term, ...value) => [el("dt", { text: term }), el("dd", {}, ...value)]

function showDecision(trace) {
  const request = trace.payload?.request ?? {}
  const response = trace.payload?.response ?? {}
  $("decision-facts").replaceChildren(
    ...fact("Effect", effectBadge(trace.decision)),
    ...fact("Reason", response.reason ?? ""),
    ...fact("Status", String(response.status ?? "")),
    ...fact("Domain", trace.domain),
    ...fact("Event kind", request.kind ?? ""),
    ...fact("Operation", request.action?.operation ?? ""),
    ...fact("Environment", trace.environment),
    ...fact("Session", trace.session_id ?? "—"),
    ...fact("Intent", response.intent_id ?? ""),
    ...fact("Latency", `${trace.elapsed_ms} ms`),
    ...fact("Decided", formatTime(trace.created_at)))
  showContent(request.action ?? {}, response.findings ?? [])
  showFindings(response.findings ?? [])
  const transformed = response.transformed_value
  $("transformed").replaceChildren(transformed === null || transformed === undefined
    ? el("p", { class: "muted", text: "None: the content was not rewritten." })
    : el("pre", { class: "content", id: "transformed-value", text: typeof transformed === "string" ? transformed : JSON.stringify(transformed, null, 2) }))
}

/** The decided text of each target the findings point into (content first), with its spans marked. */
function showContent(action, findings) {
  const spans = spansOf(findings)
  const targets = [...new Set(["content", ...spans.map((s) => s.target)])]
  const blocks = []
  for (const target of targets) {
    const text = textOf(action, target)
    if (text === null) continue
    blocks.push(el("h3", { text: target }), highlighted(text, spans.filter((s) => s.target === target)))
  }
  if (action.params !== undefined) {
    blocks.push(el("h3", { text: "params" }), el("pre", { class: "content", text: JSON.stringify(action.params, null, 2) }))
  }
  $("content-view").replaceChildren(...(blocks.length > 0 ? blocks : [el("p", { class: "muted", text: "No content was kept (data handling mode)." })]))
}

function showFindings(findings) {
  if (findings.length === 0) {
    $("findings").replaceChildren(el("li", { class: "muted", text: "No findings." }))
    return
  }
  $("findings").replaceChildren(...findings.map((finding) => {
    const evidence = evidenceOf(finding)
    const policy = finding.policy_id === null
      ? el("span", { text: finding.source })
      : el("span", {}, "Policy ", el("code", { text: finding.policy_id }),
        finding.policy_version === undefined ? "" : ` (version ${finding.policy_version})`)
    const matches = Array.isArray(evidence.matches) ? evidence.matches.map((m) => m.text).filter(Boolean) : []
    return el("li", { "data-finding-id": finding.id, "data-policy-id": finding.policy_id ?? "" },
      el("p", {}, el("strong", { text: finding.id }), " ", effectBadge(finding.effect), ` ${finding.severity} · `, policy),
      el("p", { text: finding.reason }),
      finding.remediation ? el("p", { class: "muted", text: `Remediation: ${finding.remediation}` }) : null,
      matches.length > 0 ? el("p", { class: "muted", text: `Matched: ${matches.join(" · ")}` }) : null)
  }))
}

async function showReceipt(trace) {
  const badge = $("receipt-badge")
  const receiptId = trace.payload?.response?.receipt_id
  const set = (verified, label, reason) => {
    badge.dataset.verified = String(verified)
    badge.className = `badge ${verified ? "verified" : "unverified"}`
    badge.textContent = label
    $("receipt-reason").textContent = reason
  }
  if (!receiptId) return set(false, "No receipt", "This trace names no receipt.")
  try {
    const [receipt, jwks] = await Promise.all([
      api("GET", `/v1/receipts/${encodeURIComponent(receiptId)}`),
      fetch("/.well-known/jwks.json").then((response) => response.json())
    ])
    const result = await verifyReceipt(receipt.jws, jwks, { trace_id: trace.trace_id, effect: trace.decision })
    set(result.verified, result.verified ? "✓ Verified" : "✗ Not verified", result.reason)
    $("receipt-facts").replaceChildren(
      ...fact("Receipt", receipt.receipt_id),
      ...fact("Issued", formatTime(result.claims?.issued_at ?? receipt.created_at)),
      ...fact("Signed effect", result.claims?.effect ?? ""),
      ...fact("Key", pageLink("/.well-known/jwks.json", {}, "jwks.json")))
  } catch (error) {
    set(false, "✗ Not verified", `The receipt could not be read: ${error.message}`)
  }
}

/**
 * NEIGHBOURS items of a run's list around `id` (`around`), and whether they are centred on it; the
 * run's first ones when there is no id or the run has no such item (run_event_id is the caller's word).
 */
async function neighbours(path, key, id) {
  const first = () => api("GET", path + query({ limit: NEIGHBOURS }))
    .then((page) => ({ items: page[key], centred: false }), () => ({ items: [], centred: false }))
  if (!id) return first()
  return api("GET", path + query({ around: id, limit: NEIGHBOURS }))
    .then((page) => ({ items: page[key], centred: true }), first)
}

/** The run's events around this decision's event and its decisions around this one, both marked. */
async function showRun(trace) {
  const view = $("run-view")
  if (!trace.run_id) return view.replaceChildren(el("p", { class: "muted", text: "This decision was not part of a run." }))
  const runId = encodeURIComponent(trace.run_id)
  const [events, traces] = await Promise.all([
    neighbours(`/v1/runs/${runId}/events`, "events", trace.run_event_id),
    neighbours(`/v1/runs/${runId}/traces`, "traces", trace.trace_id)
  ])
  const current = (yes) => ({ "aria-current": yes ? "true" : null, class: yes ? "current" : null })
  view.replaceChildren(
    el("p", {}, "Run ", pageLink("/dashboard/traces", { run_id: trace.run_id }, trace.run_id), " (all its traces in the explorer)"),
    el("h3", { text: events.centred ? "Events around this decision" : "First events of the run" }),
    events.items.length === 0 ? el("p", { class: "muted", text: "No events." }) : el("ol", { id: "run-events" }, ...events.items.map((event) => {
      const isThis = event.id === trace.run_event_id
      return el("li", { ...current(isThis), "data-sequence": event.sequence },
        `#${event.sequence} ${event.kind}${event.label ? ` · ${event.label}` : ""}${isThis ? " (this decision)" : ""}`)
    })),
    el("h3", { text: traces.centred ? "Decisions around this one" : "Latest decisions of the run" }),
    el("ul", { id: "run-traces" }, ...traces.items.map((other) => {
      const isThis = other.trace_id === trace.trace_id
      return el("li", { ...current(isThis), "data-trace-id": other.trace_id }, effectBadge(other.decision), " ",
        isThis ? el("strong", { text: `${other.trace_id} (this one)` }) : traceLink(other))
    })))
}

async function showReviews() {
  const page = await api("GET", `/v1/traces/${encodeURIComponent(traceId)}/review-events${query({ limit: REVIEWS })}`)
  $("reviews").replaceChildren(...(page.review_events.length === 0
    ? [el("li", { class: "muted", text: "Not reviewed yet." })]
    : page.review_events.map((review) => el("li", { "data-review-id": review.id },
      el("strong", { text: review.outcome }), ` by ${review.reviewer_id}, ${formatTime(review.created_at)}`,
      review.reason_codes.length > 0 ? el("div", { class: "muted", text: `Reasons: ${review.reason_codes.join(", ")}` }) : null,
      review.note ? el("div", { text: review.note }) : null))))
}

async function postReview(event) {
  event.preventDefault()
  const form = event.target
  const outcome = form.elements.outcome.value
  const reasonCodes = form.elements.reason_codes.value.split(",").map((code) => code.trim()).filter(Boolean)
  const note = form.elements.note.value.trim()
  if (outcome === "") return message($("review-message"), "Choose an outcome.", "error")
  const button = form.querySelector("button")
  button.disabled = true
  try {
    await api("POST", `/v1/traces/${encodeURIComponent(traceId)}/review-events`, {
      outcome,
      ...(reasonCodes.length > 0 ? { reason_codes: reasonCodes } : {}),
      ...(note === "" ? {} : { note })
    })
    form.reset()
    message($("review-message"), "Review posted.")
    await showReviews()
  } catch (error) {
    message($("review-message"), `Could not post the review: ${error.message}`, "error")
  }
  button.disabled = false
}

$("review-form").addEventListener("submit", postReview)
$("trace-title").textContent = traceId
start(async () => {
  message($("trace-message"), "Loading…")
  try {
    const trace = await findTrace()
    if (!trace) return message($("trace-message"), "No trace with this id in the workspace.", "error")
    message($("trace-message"), "")
    $("trace-view").hidden = false
    showDecision(trace)
    await Promise.all([showReceipt(trace), showRun(trace), showReviews()])
  } catch (error) {
    if (error.status !== 401) message($("trace-message"), `Could not load the trace: ${error.message}`, "error")
  }
})
