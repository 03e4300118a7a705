// Guardrail dashboard: signs in with a session (POST /v1/auth/login), lists the workspace's
// saved views (GET /v1/analytics/views) and draws each widget of the chosen view from
// POST /v1/analytics/query as inline SVG. Plain browser JavaScript: no build, no CDN.
"use strict"

const SESSION_KEY = "guardrail.dashboard.session"
const VIEW_KEY = "guardrail.dashboard.view"
const PALETTE = ["#2f6fde", "#e8743b", "#19a979", "#945ecf", "#ed4a7b", "#13a4b4", "#c9a227", "#525df4", "#8c6e4b", "#6b7385"]
const SVG_NS = "http://www.w3.org/2000/svg"
const AUTO_REFRESH_MS = 30_000
const RANGES = { "24h": 24 * 3600e3, "7d": 7 * 24 * 3600e3, "30d": 30 * 24 * 3600e3 }

const $ = (id) => document.getElementById(id)

// ---- session

const session = {
  get() {
    try {
      const value = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? "null")
      return value && typeof value.jwt === "string" ? value : null
    } catch {
      return null
    }
  },
  set(value) { sessionStorage.setItem(SESSION_KEY, JSON.stringify(value)) },
  clear() { sessionStorage.removeItem(SESSION_KEY) }
}

// The API takes the SHA-256 hex digest of the password. crypto.subtle exists only in secure
// contexts (https or localhost), so a small implementation covers plain http on other hosts.
async function sha256Hex(text) {
  const bytes = new TextEncoder().encode(text)
  if (globalThis.crypto && crypto.subtle) {
    const digest = await crypto.subtle.digest("SHA-256", bytes)
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("")
  }
  return sha256Fallback(bytes)
}

function sha256Fallback(bytes) {
  const k = []
  const h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
  for (let n = 2, found = 0; found < 64; n++) {
    let prime = true
    for (let d = 2; d * d <= n; d++) if (n % d === 0) { prime = false; break }
    if (prime) k[found++] = (Math.cbrt(n) % 1) * 2 ** 32 | 0
  }
  const length = bytes.length
  const padded = new Uint8Array(((length + 9 + 63) >> 6) << 6)
  padded.set(bytes)
  padded[length] = 0x80
  const view = new DataView(padded.buffer)
  view.setUint32(padded.length - 8, Math.floor(length / 2 ** 29))
  view.setUint32(padded.length - 4, (length << 3) >>> 0)
  const w = new Array(64)
  const rotr = (x, n) => (x >>> n) | (x << (32 - n))
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + i * 4)
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3)
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10)
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0
    }
    let [a, b, c, d, e, f, g, hh] = h
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i]) | 0
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0
      hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0
    }
    h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0
    h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + hh) | 0
  }
  return h.map((x) => (x >>> 0).toString(16).padStart(8, "0")).join("")
}

// ---- API

class ApiError extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

async function api(method, path, body) {
  const headers = { accept: "application/json" }
  const current = session.get()
  if (current) headers.authorization = `Bearer ${current.jwt}`
  if (body !== undefined) headers["content-type"] = "application/json"
  let response
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  } catch {
    throw new ApiError(0, "network_error", "The service could not be reached.")
  }
  const text = await response.text()
  let parsed = null
  try { parsed = text === "" ? null : JSON.parse(text) } catch { parsed = null }
  if (!response.ok) {
    const error = parsed && parsed.error ? parsed.error : {}
    if (response.status === 401 && path !== "/v1/auth/login") {
      session.clear()
      showSignIn("Your session ended; sign in again.")
    }
    throw new ApiError(response.status, error.code ?? "http_" + response.status, error.message ?? `HTTP ${response.status}`)
  }
  return parsed
}

// ---- sign in

function showSignIn(message) {
  $("board").hidden = true
  $("session").hidden = true
  $("sign-in").hidden = false
  const error = $("sign-in-error")
  error.hidden = !message
  error.textContent = message ?? ""
  $("username").focus()
}

async function signIn(event) {
  event.preventDefault()
  const button = $("sign-in-button")
  button.disabled = true
  try {
    const username = $("username").value.trim()
    const password = await sha256Hex($("password").value)
    const result = await api("POST", "/v1/auth/login", { username, password })
    session.set({ jwt: result.jwt, username: result.username ?? username })
    $("password").value = ""
    await showBoard()
  } catch (error) {
    const message = error.status === 401 || error.status === 400
      ? "Wrong username or password."
      : error.status === 429 ? "Too many attempts; wait a minute and try again." : error.message
    showSignIn(message)
  } finally {
    button.disabled = false
  }
}

// ---- board

const state = { views: [], catalog: null, loading: 0 }

async function showBoard() {
  const current = session.get()
  if (!current) return showSignIn()
  $("sign-in").hidden = true
  $("board").hidden = false
  $("session").hidden = false
  $("who").textContent = current.username ?? ""
  setMessage("Loading views…")
  try {
    const [views, catalog] = await Promise.all([
      api("GET", "/v1/analytics/views"),
      api("GET", "/v1/analytics/catalog").catch(() => null)
    ])
    state.views = views.views ?? []
    state.catalog = catalog
  } catch (error) {
    if (error.status !== 401) setMessage(`Could not list views: ${error.message}`)
    return
  }
  const select = $("view-select")
  select.replaceChildren()
  if (state.views.length === 0) {
    $("widgets").replaceChildren()
    setMessage("This workspace has no saved views yet. Create one with POST /v1/analytics/views (see docs/dashboard.md).")
    return
  }
  for (const view of state.views) select.append(new Option(view.name + (view.is_default ? " (default)" : ""), view.id))
  const remembered = sessionStorage.getItem(VIEW_KEY)
  const initial = state.views.find((v) => v.id === remembered) ?? state.views.find((v) => v.is_default) ?? state.views[0]
  select.value = initial.id
  await renderView()
}

function setMessage(text) { $("board-message").textContent = text ?? "" }

function selectedView() { return state.views.find((view) => view.id === $("view-select").value) }

function metricLabel(metric) {
  const entry = state.catalog?.metrics?.find((m) => m.metric === metric)
  return entry ? entry.label : metric
}

function dimensionLabel(dimension) {
  const entry = state.catalog?.dimensions?.find((d) => d.dimension === dimension)
  return entry ? entry.label : dimension
}

function timeRange() {
  const range = $("range-select").value
  if (!(range in RANGES)) return { interval: "day" }
  const end = new Date()
  const start = new Date(end.getTime() - RANGES[range])
  return { start: start.toISOString(), end: end.toISOString(), interval: range === "24h" ? "hour" : "day" }
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
    : "Filters: " + filters.map((f) => `${dimensionLabel(f.dimension)} = ${f.values.join(", ")}`).join("; ")
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
  const card = document.createElement("article")
  card.className = "widget"
  card.dataset.widgetId = widget.id
  card.dataset.chartType = widget.chart_type
  card.dataset.state = "loading"
  const layout = widget.layout
  if (layout) {
    const w = Math.min(Math.max(layout.w, 1), 12)
    card.style.gridColumn = `${Math.min(layout.x, 12 - w) + 1} / span ${w}`
    card.style.gridRow = `${layout.y + 1} / span ${Math.max(layout.h, 1)}`
  }
  const header = document.createElement("header")
  const title = document.createElement("h3")
  title.textContent = widget.title || metricLabel(widget.metric)
  title.title = widget.group_by ? `${metricLabel(widget.metric)} by ${dimensionLabel(widget.group_by)}` : metricLabel(widget.metric)
  const total = document.createElement("span")
  total.className = "total"
  total.textContent = "…"
  header.append(title, total)
  const chart = document.createElement("div")
  chart.className = "chart"
  card.append(header, chart)
  return card
}

function widgetError(card, error) {
  card.dataset.state = "error"
  card.querySelector(".total").textContent = ""
  const chart = card.querySelector(".chart")
  const p = document.createElement("p")
  p.className = "error"
  p.textContent = error.message
  chart.replaceChildren(p)
}

function formatNumber(value, metric) {
  if (typeof value !== "number" || !Number.isFinite(value)) return String(value)
  if (/_rate$/.test(metric)) return `${(value * 100).toFixed(value === 0 ? 0 : 1)}%`
  if (Number.isInteger(value)) return value.toLocaleString("en-US")
  return value.toLocaleString("en-US", { maximumFractionDigits: 2 })
}

function drawWidget(card, widget, result) {
  card.dataset.state = "ready"
  card.dataset.total = String(result.total)
  const total = card.querySelector(".total")
  total.replaceChildren("Total ", Object.assign(document.createElement("strong"), { textContent: formatNumber(result.total, widget.metric) }))
  const points = Array.isArray(result.points) ? result.points : []
  const chart = card.querySelector(".chart")
  const draw = { big_number: bigNumber, line: lineChart, bar: barChart, pie: pieChart, table: tableChart }[widget.chart_type] ?? tableChart
  chart.replaceChildren(draw(points, result, widget))
}

// ---- charts (inline SVG)

function svg(tag, attributes = {}, text) {
  const element = document.createElementNS(SVG_NS, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  if (text !== undefined) element.textContent = text
  return element
}

function empty() {
  return Object.assign(document.createElement("p"), { className: "empty", textContent: "No data in this range." })
}

function shortLabel(label) {
  // Time buckets arrive as timestamps: show the date (and the hour when it is not midnight).
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(label)
  if (!match) return label.length > 14 ? label.slice(0, 13) + "…" : label
  return match[4] === "00" && match[5] === "00" ? `${match[2]}-${match[3]}` : `${match[2]}-${match[3]} ${match[4]}:${match[5]}`
}

function bigNumber(_points, result, widget) {
  const element = document.createElement("p")
  element.className = "big-number"
  element.textContent = formatNumber(result.total, widget.metric)
  return element
}

const WIDTH = 480
const HEIGHT = 200
const PAD = { left: 44, right: 10, top: 10, bottom: 28 }

function axes(root, max, metric) {
  const bottom = HEIGHT - PAD.bottom
  root.append(svg("line", { x1: PAD.left, y1: bottom, x2: WIDTH - PAD.right, y2: bottom, stroke: "#dde1ea" }))
  for (const fraction of [0, 0.5, 1]) {
    const y = bottom - fraction * (bottom - PAD.top)
    root.append(svg("line", { x1: PAD.left, y1: y, x2: WIDTH - PAD.right, y2: y, stroke: "#eef0f5" }))
    root.append(svg("text", { x: PAD.left - 6, y: y + 4, "text-anchor": "end" }, formatNumber(max * fraction, metric)))
  }
}

function niceMax(points) {
  const max = Math.max(0, ...points.map((p) => p.value))
  if (max === 0) return 1
  const magnitude = 10 ** Math.floor(Math.log10(max))
  return [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((m) => m >= max)
}

function lineChart(points, _result, widget) {
  if (points.length === 0) return empty()
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": widget.title, class: "line-chart" })
  const max = niceMax(points)
  axes(root, max, widget.metric)
  const span = WIDTH - PAD.left - PAD.right
  const x = (i) => PAD.left + (points.length === 1 ? span / 2 : (i * span) / (points.length - 1))
  const y = (v) => HEIGHT - PAD.bottom - (v / max) * (HEIGHT - PAD.bottom - PAD.top)
  root.append(svg("polyline", {
    points: points.map((p, i) => `${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(" "),
    fill: "none", stroke: PALETTE[0], "stroke-width": 2, "stroke-linejoin": "round"
  }))
  points.forEach((p, i) => {
    const dot = svg("circle", { cx: x(i), cy: y(p.value), r: 3, fill: PALETTE[0], "data-label": p.label, "data-value": p.value })
    dot.append(svg("title", {}, `${p.label}: ${formatNumber(p.value, widget.metric)}`))
    root.append(dot)
  })
  const labelEvery = Math.max(1, Math.ceil(points.length / 6))
  points.forEach((p, i) => {
    if (i % labelEvery === 0 || i === points.length - 1) {
      // The outermost labels anchor inwards so they are not clipped at the edges.
      const anchor = points.length === 1 ? "middle" : i === 0 ? "start" : i === points.length - 1 ? "end" : "middle"
      root.append(svg("text", { x: x(i), y: HEIGHT - 8, "text-anchor": anchor }, shortLabel(p.label)))
    }
  })
  return root
}

function barChart(points, _result, widget) {
  if (points.length === 0) return empty()
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": widget.title, class: "bar-chart" })
  const max = niceMax(points)
  axes(root, max, widget.metric)
  const span = WIDTH - PAD.left - PAD.right
  const slot = span / points.length
  const barWidth = Math.max(2, Math.min(48, slot * 0.7))
  const labelEvery = Math.max(1, Math.ceil(points.length / 8))
  points.forEach((p, i) => {
    const height = (p.value / max) * (HEIGHT - PAD.bottom - PAD.top)
    const cx = PAD.left + slot * i + slot / 2
    const bar = svg("rect", {
      x: cx - barWidth / 2, y: HEIGHT - PAD.bottom - height, width: barWidth, height: Math.max(height, 0),
      fill: widget.group_by ? PALETTE[i % PALETTE.length] : PALETTE[0], "data-label": p.label, "data-value": p.value
    })
    bar.append(svg("title", {}, `${p.label}: ${formatNumber(p.value, widget.metric)}`))
    root.append(bar)
    if (i % labelEvery === 0) root.append(svg("text", { x: cx, y: HEIGHT - 8, "text-anchor": "middle" }, shortLabel(p.label)))
  })
  return root
}

function pieChart(points, _result, widget) {
  const slices = points.filter((p) => p.value > 0)
  if (slices.length === 0) return empty()
  const wrapper = document.createElement("div")
  const size = 160
  const r = 70
  const c = size / 2
  const root = svg("svg", { viewBox: `0 0 ${size} ${size}`, role: "img", "aria-label": widget.title, class: "pie-chart" })
  const sum = slices.reduce((acc, p) => acc + p.value, 0)
  let angle = -Math.PI / 2
  slices.forEach((p, i) => {
    const sweep = (p.value / sum) * 2 * Math.PI
    const colour = PALETTE[i % PALETTE.length]
    let shape
    if (slices.length === 1) {
      shape = svg("circle", { cx: c, cy: c, r, fill: colour })
    } else {
      const x1 = c + r * Math.cos(angle)
      const y1 = c + r * Math.sin(angle)
      const x2 = c + r * Math.cos(angle + sweep)
      const y2 = c + r * Math.sin(angle + sweep)
      shape = svg("path", {
        d: `M${c},${c} L${x1.toFixed(2)},${y1.toFixed(2)} A${r},${r} 0 ${sweep > Math.PI ? 1 : 0} 1 ${x2.toFixed(2)},${y2.toFixed(2)} Z`,
        fill: colour
      })
    }
    shape.setAttribute("data-label", p.label)
    shape.setAttribute("data-value", String(p.value))
    shape.append(svg("title", {}, `${p.label}: ${formatNumber(p.value, widget.metric)}`))
    root.append(shape)
    angle += sweep
  })
  const legend = document.createElement("ul")
  legend.className = "legend"
  slices.forEach((p, i) => {
    const item = document.createElement("li")
    const swatch = svg("svg", { viewBox: "0 0 10 10" })
    swatch.append(svg("rect", { width: 10, height: 10, fill: PALETTE[i % PALETTE.length] }))
    item.append(swatch, `${p.label}: ${formatNumber(p.value, widget.metric)}`)
    legend.append(item)
  })
  wrapper.append(root, legend)
  return wrapper
}

function tableChart(points, result, widget) {
  const table = document.createElement("table")
  table.className = "data"
  const head = table.createTHead().insertRow()
  head.append(
    Object.assign(document.createElement("th"), { textContent: widget.group_by ? dimensionLabel(widget.group_by) : "Period" }),
    Object.assign(document.createElement("th"), { textContent: metricLabel(widget.metric), className: "value" })
  )
  const body = table.createTBody()
  for (const p of points) {
    const row = body.insertRow()
    row.insertCell().textContent = p.label
    const cell = row.insertCell()
    cell.className = "value"
    cell.textContent = formatNumber(p.value, widget.metric)
  }
  const foot = table.createTFoot().insertRow()
  foot.insertCell().textContent = "Total"
  const cell = foot.insertCell()
  cell.className = "value"
  cell.textContent = formatNumber(result.total, widget.metric)
  return points.length === 0 && result.total === 0 ? empty() : table
}

// ---- wiring

document.addEventListener("DOMContentLoaded", () => {
  $("sign-in-form").addEventListener("submit", signIn)
  $("sign-out").addEventListener("click", () => {
    session.clear()
    sessionStorage.removeItem(VIEW_KEY)
    $("widgets").replaceChildren()
    delete $("widgets").dataset.viewId
    showSignIn()
  })
  $("view-select").addEventListener("change", renderView)
  $("range-select").addEventListener("change", renderView)
  $("refresh").addEventListener("click", renderView)
  // Aggregates are fresh within a second or so; auto-refresh re-queries the view on screen.
  setInterval(() => {
    if ($("auto-refresh").checked && !$("board").hidden && document.visibilityState === "visible") void renderView()
  }, AUTO_REFRESH_MS)
  if (session.get()) void showBoard()
  else showSignIn()
})
