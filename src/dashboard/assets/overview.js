// Overview: the workspace's saved analytics views (GET /v1/analytics/views), the default one
// first (every new workspace has one), each widget drawn from POST /v1/analytics/query.
import { DRAW, formatNumber, labels, tableChart } from "./charts.js"
import { api } from "./session.js"
import { $, el, start } from "./shell.js"

const VIEW_KEY = "guardrail.dashboard.view"
const AUTO_REFRESH_MS = 30_000
const RANGES = { "24h": 24 * 3600e3, "7d": 7 * 24 * 3600e3, "30d": 30 * 24 * 3600e3 }

const state = { views: [], loading: 0, budget: null }

/** The workspace's LLM budget (settings `config.llm_budget`), for the spend widgets; none when unset. */
async function loadBudget() {
  try {
    const settings = await api("GET", "/v1/settings")
    const budget = settings.config?.llm_budget
    state.budget = budget && Number.isInteger(budget.cap_minor) ? budget : null
  } catch {
    state.budget = null
  }
}

const money = (minor) => `$${(minor / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`

/**
 * Spend against budget: a daily cap is drawn as a level on daily buckets; every budget is
 * stated under the chart with the range's spend.
 */
function withBudget(widget, interval) {
  if (widget.metric !== "llm_cost_minor" || !state.budget) return widget
  const { cap_minor: cap, window } = state.budget
  return window === "day" && interval === "day" ? { ...widget, reference: { value: cap, label: `Daily budget ${money(cap)}` } } : widget
}

function budgetNote(widget, total) {
  if (widget.metric !== "llm_cost_minor") return null
  if (!state.budget) return el("p", { class: "muted budget", text: `Spent ${money(total)}; no LLM budget is set.` })
  const { cap_minor: cap, window } = state.budget
  return el("p", { class: "muted budget", "data-cap": cap, text: `Spent ${money(total)} in this range; budget ${money(cap)} per ${window}.` })
}

function setMessage(text) { $("board-message").textContent = text ?? "" }

async function showViews() {
  setMessage("Loading views…")
  let views
  try {
    const [list, catalog] = await Promise.all([
      api("GET", "/v1/analytics/views"),
      api("GET", "/v1/analytics/catalog").catch(() => null)
    ])
    views = list.views ?? []
    const metricOf = (m) => catalog?.metrics?.find((entry) => entry.metric === m)?.label ?? m
    const dimensionOf = (d) => catalog?.dimensions?.find((entry) => entry.dimension === d)?.label ?? d
    labels.metric = metricOf
    labels.dimension = dimensionOf
  } catch (error) {
    if (error.status !== 401) setMessage(`Could not list views: ${error.message}`)
    return
  }
  state.views = views
  const select = $("view-select")
  select.replaceChildren()
  if (views.length === 0) {
    $("widgets").replaceChildren()
    setMessage("This workspace has no saved views yet. Create one with POST /v1/analytics/views (see docs/dashboard.md).")
    return
  }
  for (const view of views) select.append(new Option(view.name + (view.is_default ? " (default)" : ""), view.id))
  const remembered = sessionStorage.getItem(VIEW_KEY)
  const initial = views.find((v) => v.id === remembered) ?? views.find((v) => v.is_default) ?? views[0]
  select.value = initial.id
  await renderView()
}

const selectedView = () => state.views.find((view) => view.id === $("view-select").value)

function timeRange() {
  const range = $("range-select").value
  if (!(range in RANGES)) return { interval: "day" }
  const end = new Date()
  const begin = new Date(end.getTime() - RANGES[range])
  return { start: begin.toISOString(), end: end.toISOString(), interval: range === "24h" ? "hour" : "day" }
}

/** The query body of one widget: the view's filters, the range, and grouping by chart type. */
function queryOf(view, widget) {
  const { interval, ...range } = timeRange()
  const filters = (view.config.filters ?? []).filter((f) => Array.isArray(f.values) && f.values.length > 0)
  const body = { metric: widget.metric, ...range }
  if (filters.length > 0) body.filters = filters
  const kind = widget.chart_type
  if (kind === "line") body.interval = interval
  else if (kind === "bar" || kind === "pie" || kind === "table") {
    if (widget.group_by) body.group_by = widget.group_by
    else if (kind !== "pie") body.interval = interval
  }
  return body
}

async function renderView() {
  const view = selectedView()
  if (!view) return
  sessionStorage.setItem(VIEW_KEY, view.id)
  const filters = (view.config.filters ?? []).filter((f) => f.values?.length)
  $("view-filters").textContent = filters.length === 0
    ? ""
    : "Filters: " + filters.map((f) => `${labels.dimension(f.dimension)} = ${f.values.join(", ")}`).join("; ")
  const widgets = [...(view.config.widgets ?? [])].sort((a, b) =>
    (a.layout?.y ?? 0) - (b.layout?.y ?? 0) || (a.layout?.x ?? 0) - (b.layout?.x ?? 0))
  setMessage(widgets.length === 0 ? "This view has no widgets." : "")
  const container = $("widgets")
  // A refresh of the view on screen redraws the charts in place; another view gets new cards.
  const shown = [...container.children].map((card) => card.dataset.widgetId).join("\n")
  if (container.dataset.viewId !== view.id || shown !== widgets.map((w) => w.id).join("\n")) {
    container.replaceChildren(...widgets.map(widgetCard))
    container.dataset.viewId = view.id
  }
  const loading = ++state.loading
  await Promise.all(widgets.map(async (widget) => {
    const card = container.querySelector(`[data-widget-id="${CSS.escape(widget.id)}"]`)
    try {
      const result = await api("POST", "/v1/analytics/query", queryOf(view, widget))
      if (loading === state.loading) drawWidget(card, widget, result)
    } catch (error) {
      if (loading === state.loading) widgetError(card, error)
    }
  }))
  if (loading === state.loading) $("updated").textContent = `Updated ${new Date().toLocaleTimeString()}`
}

function widgetCard(widget) {
  const card = el("article", { class: "widget", "data-widget-id": widget.id, "data-chart-type": widget.chart_type, "data-state": "loading" })
  const layout = widget.layout
  if (layout) {
    const w = Math.min(Math.max(layout.w, 1), 12)
    card.style.gridColumn = `${Math.min(layout.x, 12 - w) + 1} / span ${w}`
    card.style.gridRow = `${layout.y + 1} / span ${Math.max(layout.h, 1)}`
  }
  const metric = labels.metric(widget.metric)
  const title = el("h2", { text: widget.title || metric, title: widget.group_by ? `${metric} by ${labels.dimension(widget.group_by)}` : metric })
  card.append(el("header", {}, title, el("span", { class: "total", text: "…" })), el("div", { class: "chart" }))
  return card
}

function widgetError(card, error) {
  card.dataset.state = "error"
  card.querySelector(".total").textContent = ""
  card.querySelector(".chart").replaceChildren(el("p", { class: "error", text: error.message }))
}

function drawWidget(card, widget, result) {
  card.dataset.state = "ready"
  card.dataset.total = String(result.total)
  card.querySelector(".total").replaceChildren("Total ", el("strong", { text: formatNumber(result.total, widget.metric) }))
  const points = Array.isArray(result.points) ? result.points : []
  const draw = DRAW[widget.chart_type] ?? tableChart
  const shown = withBudget(widget, timeRange().interval)
  card.querySelector(".chart").replaceChildren(draw(points, result, shown), budgetNote(widget, result.total) ?? "")
}

$("view-select").addEventListener("change", renderView)
$("range-select").addEventListener("change", renderView)
$("refresh").addEventListener("click", renderView)
// Aggregates are fresh within a second or so; auto-refresh re-queries the view on screen.
setInterval(() => {
  if ($("auto-refresh").checked && !$("board").hidden && document.visibilityState === "visible") void renderView()
}, AUTO_REFRESH_MS)
start(() => Promise.all([loadBudget(), showViews()]), () => {
  sessionStorage.removeItem(VIEW_KEY)
  $("widgets").replaceChildren()
  delete $("widgets").dataset.viewId
})
