// Inline SVG charts of analytics query results (points of {label, value}): big number, line, bar,
// pie and table. Each drawing function takes the points, the query result and the widget
// ({title, metric, group_by}) and `labels` ({metric, dimension}) for headings.

const PALETTE = ["#2f6fde", "#e8743b", "#19a979", "#945ecf", "#ed4a7b", "#13a4b4", "#c9a227", "#525df4", "#8c6e4b", "#6b7385"]
const SVG_NS = "http://www.w3.org/2000/svg"

export const labels = { metric: (m) => m, dimension: (d) => d }

export function formatNumber(value, metric) {
  if (typeof value !== "number" || !Number.isFinite(value)) return String(value)
  if (/_rate$/.test(metric)) return `${(value * 100).toFixed(value === 0 ? 0 : 1)}%`
  if (Number.isInteger(value)) return value.toLocaleString("en-US")
  return value.toLocaleString("en-US", { maximumFractionDigits: 2 })
}

export function svg(tag, attributes = {}, text) {
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

export function bigNumber(_points, result, widget) {
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

function niceMax(points, floor = 0) {
  const max = Math.max(floor, ...points.map((p) => p.value))
  if (max === 0) return 1
  const magnitude = 10 ** Math.floor(Math.log10(max))
  return [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((m) => m >= max)
}

export function lineChart(points, _result, widget) {
  if (points.length === 0) return empty()
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": widget.title, class: "line-chart" })
  // widget.reference ({value, label}): a dashed level to compare with, e.g. a budget cap.
  const reference = widget.reference
  const max = niceMax(points, reference?.value ?? 0)
  axes(root, max, widget.metric)
  const span = WIDTH - PAD.left - PAD.right
  const x = (i) => PAD.left + (points.length === 1 ? span / 2 : (i * span) / (points.length - 1))
  const y = (v) => HEIGHT - PAD.bottom - (v / max) * (HEIGHT - PAD.bottom - PAD.top)
  if (reference) {
    const level = svg("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(reference.value), y2: y(reference.value), stroke: "#b42318", "stroke-dasharray": "6 4", class: "reference", "data-value": reference.value })
    level.append(svg("title", {}, reference.label))
    root.append(level, svg("text", { x: WIDTH - PAD.right, y: y(reference.value) + 14, "text-anchor": "end" }, reference.label))
  }
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

export function barChart(points, _result, widget) {
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

export function pieChart(points, _result, widget) {
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

export function tableChart(points, result, widget) {
  const table = document.createElement("table")
  table.className = "data"
  const head = table.createTHead().insertRow()
  head.append(
    Object.assign(document.createElement("th"), { textContent: widget.group_by ? labels.dimension(widget.group_by) : "Period" }),
    Object.assign(document.createElement("th"), { textContent: labels.metric(widget.metric), className: "value" })
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

export const DRAW = { big_number: bigNumber, line: lineChart, bar: barChart, pie: pieChart, table: tableChart }
